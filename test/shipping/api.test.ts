import { afterAll, describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';
import type { TestPlatform } from '../support/platform.ts';
import { startFakeEasyPost } from './easypost-server.ts';
import { DESTINATION, ORIGIN, PACKAGE, eventually, newClock, newOrder, ship, shipment, shipmentBody } from './support.ts';

const easypost = await startFakeEasyPost();
useEnv({
  EASYPOST_API_KEY: easypost.apiKey, EASYPOST_API_BASE: easypost.url, EASYPOST_WEBHOOK_SECRET: easypost.webhookSecret,
  SHIPPING_POLL_INTERVAL_MS: '1000', SHIPPING_COMPARE_TIMEOUT_MS: '600',
});
afterAll(() => easypost.close());

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '5000' } }, (t) => ({ platform, http, key } = t));

const SANDBOX = ['parcelpoint', 'swiftex', 'cargoline'];
const paths = (res: { body: { errors?: { path: string }[] } }) => (res.body.errors ?? []).map((e) => e.path).sort();

describe('POST /v3/shipping/create refuses bad input with every bad field named', () => {
  it('countries, postal codes, weights, dimensions, service levels and unknown fields, all at once', async () => {
    const res = await http('/v3/shipping/create', {
      key, body: {
        order_id: 'ord_x', service_level: 'teleport', colour: 'red',
        origin: { ...ORIGIN, country: 'XX' }, destination: { ...DESTINATION, postal_code: 'ABCDE' },
        packages: [{ weight: 0, dimensions: { length: -1, width: 10, height: 10 } }],
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(paths(res)).toEqual(['colour', 'destination.postal_code', 'origin.country', 'packages.0.dimensions.length', 'packages.0.weight', 'service_level']);
    expect(res.body.suggestion).toBeTruthy();
  });

  it('NUL bytes, huge numbers, deep nesting, DD/MM dates and a missing body', async () => {
    const { orderId } = await newOrder(http, key);
    const nul = await http('/v3/shipping/create', { key, body: shipmentBody(orderId, { origin: { ...ORIGIN, address: 'Dock\u0000Rd' } }) });
    expect(nul.status).toBe(422);
    expect(paths(nul)).toContain('origin.address');
    const huge = await http('/v3/shipping/create', { key, rawBody: JSON.stringify(shipmentBody(orderId)).replace('"value":4500', '"value":1e400'), headers: { 'content-type': 'application/json' } });
    expect(huge.status).toBe(422);
    expect(paths(huge)).toEqual(['packages.0.value']);
    const heavy = await http('/v3/shipping/create', { key, body: shipmentBody(orderId, { packages: [{ ...PACKAGE, weight: 1e9 }] }) });
    expect(heavy.status).toBe(422);
    expect(paths(heavy)).toEqual(['packages.0.weight']);
    const deep = await http('/v3/shipping/create', { key, rawBody: `${'{"a":'.repeat(70)}1${'}'.repeat(70)}`, headers: { 'content-type': 'application/json' } });
    expect(deep.status).toBe(400);
    const none = await http('/v3/shipping/create', { key, method: 'POST' });
    expect(none.status).toBe(422);
    expect(paths(none)).toEqual(expect.arrayContaining(['order_id', 'origin', 'destination', 'packages', 'service_level']));
  });

  it('an unknown order and another account\'s order are 404; carrier limits, clocks and scenarios are 422', async () => {
    const unknown = await http('/v3/shipping/create', { key, body: shipmentBody('ord_01jpa7x6h8m0pr2t4w6y8b0d2f') });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const otherKey = await platform.newKey({ accountId: await platform.newAccount() });
    const { orderId: foreign } = await newOrder(http, otherKey);
    const theirs = await http('/v3/shipping/create', { key, body: shipmentBody(foreign) });
    expect(theirs.status).toBe(404);

    const { orderId } = await newOrder(http, key);
    const limits = await http('/v3/shipping/create', { key, body: shipmentBody(orderId, { packages: [{ ...PACKAGE, weight: 40 }, { ...PACKAGE, dimensions: { length: 160, width: 10, height: 10 } }] }) });
    expect(limits.status).toBe(422);
    expect(paths(limits)).toEqual(['packages.0.weight', 'packages.1.dimensions']);
    expect(limits.body.errors[0].message).toContain('30 kg');
    const more = await http('/v3/shipping/create', { key, body: shipmentBody(orderId, { carrier: 'ufo', test_clock: 'shclk_nope', metadata: { sandbox_scenario: 'stolen' } }) });
    expect(more.status).toBe(422);
    expect(paths(more)).toEqual(['carrier', 'metadata.sandbox_scenario', 'test_clock']);
  });

  it('a carrier that rejects the address: 422 address_rejected naming the field, nothing written', async () => {
    const { orderId } = await newOrder(http, key);
    const res = await http('/v3/shipping/create', { key, body: shipmentBody(orderId, { destination: { ...DESTINATION, postal_code: '99993' } }) });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ code: 'address_rejected', carrier: 'parcelpoint' });
    expect(paths(res)).toEqual(['destination.postal_code']);
    expect(await platform.sql('select 1 from shipping_shipments where order_id = $1', [orderId])).toHaveLength(0);
  });

  it('the same Idempotency-Key creates one shipment; a different body with it is 422', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, '2025-03-03T10:00:00Z');
    const body = shipmentBody(orderId, { test_clock: clock });
    const headers = { 'idempotency-key': `ship-${orderId}` };
    const first = await http('/v3/shipping/create', { key, body, headers });
    const again = await http('/v3/shipping/create', { key, body, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await http('/v3/shipping/create', { key, body: { ...body, service_level: 'express' }, headers });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    expect(await platform.sql('select 1 from shipping_shipments where order_id = $1', [orderId])).toHaveLength(1);
  });
});

describe('rates', () => {
  it('GET /v3/shipping/rates: every sandbox carrier and level, cheapest first, deterministic, dimensional weight counts', async () => {
    const q = 'origin_postal=07102&destination_postal=62701&weight=2&carrier=parcelpoint,swiftex,cargoline';
    const res = await http(`/v3/shipping/rates?${q}`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.rates).toHaveLength(9);
    expect(new Set(res.body.rates.map((r: any) => r.carrier))).toEqual(new Set(SANDBOX));
    const amounts = res.body.rates.map((r: any) => r.amount);
    expect([...amounts].sort((a, b) => a - b)).toEqual(amounts);
    // parcelpoint ground, zone 5, 2 kg: (650 + 120 × 2) × 1.32 × 1.075 = 1262.91 → 1263
    expect(res.body.rates.find((r: any) => r.carrier === 'parcelpoint' && r.service_level === 'ground')).toMatchObject({ amount: 1263, currency: 'USD', estimated_days: 6 });
    expect((await http(`/v3/shipping/rates?${q}`, { key })).body.rates).toEqual(res.body.rates);
    const bulky = await http(`/v3/shipping/rates?${q}&length=50&width=40&height=30`, { key });
    const ground = (r: any) => r.body.rates.find((x: any) => x.carrier === 'parcelpoint' && x.service_level === 'ground').amount;
    expect(ground(bulky)).toBeGreaterThan(ground(res)); // 50×40×30/5000 = 12 kg billable
  });

  it('GET /v3/shipping/rates refuses bad queries naming each parameter', async () => {
    const res = await http('/v3/shipping/rates?origin_postal=ABC&destination_postal=62701&weight=-1&length=10', { key });
    expect(res.status).toBe(422);
    expect(paths(res)).toEqual(['length', 'origin_postal', 'weight']);
    const inf = await http('/v3/shipping/rates?origin_postal=07102&destination_postal=62701&weight=1e400', { key });
    expect(inf.status).toBe(422);
    expect(paths(inf)).toEqual(['weight']);
  });

  it('POST /v3/shipping/rates/compare: one carrier down and one timing out never fail the call', async () => {
    const body = (postal: string) => ({ origin: { country: 'US', postal_code: '07102' }, destination: { country: 'US', postal_code: postal }, packages: [PACKAGE], carriers: SANDBOX });
    const down = await http('/v3/shipping/rates/compare', { key, body: body('99992') });
    expect(down.status, down.text).toBe(200);
    expect(down.body.errors).toEqual([{ carrier: 'cargoline', code: 'carrier_unavailable', message: expect.any(String) }]);
    expect(new Set(down.body.rates.map((r: any) => r.carrier))).toEqual(new Set(['parcelpoint', 'swiftex']));
    expect(down.body.rates.filter((r: any) => r.cheapest)).toEqual([down.body.rates[0]]);
    expect(down.body.rates.filter((r: any) => r.fastest)).toHaveLength(1);
    const fastest = down.body.rates.find((r: any) => r.fastest);
    expect(down.body.rates.every((r: any) => r.estimated_delivery >= fastest.estimated_delivery)).toBe(true);

    const started = Date.now();
    const slow = await http('/v3/shipping/rates/compare', { key, body: body('99991') });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(slow.status).toBe(200);
    expect(slow.body.errors).toEqual([{ carrier: 'swiftex', code: 'carrier_timeout', message: expect.stringContaining('600 ms') }]);

    const bad = await http('/v3/shipping/rates/compare', { key, body: { ...body('62701'), carriers: ['parcelpoint', 'zeppelin'] } });
    expect(bad.status).toBe(422);
    expect(paths(bad)).toEqual(['carriers.1']);
  });
});

describe('pickups', () => {
  it('schedules a pickup for labelled shipments of one carrier and origin, and refuses bad days, windows and shipments', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, '2025-03-03T10:00:00Z'); // a Monday
    const a = await ship(http, key, orderId, { test_clock: clock });
    const b = await ship(http, key, orderId, { test_clock: clock });
    const other = await ship(http, key, orderId, { test_clock: clock, carrier: 'swiftex' });
    const body = (extra: Record<string, unknown> = {}) => ({
      shipment_ids: [a.id, b.id], pickup_date: '2025-03-04', time_window: { start: '10:00', end: '12:30' },
      special_instructions: 'Ring at dock 3', contact: { name: 'Dock manager', phone: '+14155550123' }, ...extra,
    });
    const refused = async (extra: Record<string, unknown>) => {
      const res = await http('/v3/shipping/pickup/schedule', { key, body: body(extra) });
      expect(res.status, res.text).toBe(422);
      return paths(res);
    };
    expect(await refused({ pickup_date: '2025-03-08' })).toEqual(['pickup_date']); // a Saturday
    expect(await refused({ pickup_date: '2025-03-03' })).toEqual(['pickup_date']); // not in the future
    expect(await refused({ pickup_date: '04/03/2025' })).toEqual(['pickup_date']);
    expect(await refused({ time_window: { start: '10:00', end: '11:00' } })).toEqual(['time_window']);
    expect(await refused({ time_window: { start: '07:00', end: '18:00' } })).toEqual(['time_window.end', 'time_window.start']);
    expect(await refused({ contact: { name: 'X', phone: '12' } })).toEqual(['contact.phone']);
    expect(await refused({ shipment_ids: [a.id, other.id] })).toEqual(['shipment_ids.1']);
    const unknown = await http('/v3/shipping/pickup/schedule', { key, body: body({ shipment_ids: ['shp_01jpa7v0f4j6kn8r1w3y5a7c9e'] }) });
    expect(unknown.status).toBe(404);

    const res = await http('/v3/shipping/pickup/schedule', { key, body: body() });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ object: 'pickup', status: 'scheduled', carrier: 'parcelpoint', shipment_ids: [a.id, b.id], pickup_date: '2025-03-04' });
    expect(res.body.id).toMatch(/^pku_/);
    expect(res.body.confirmation_number).toMatch(/^PPP-\d{8}$/);
    expect((await http(`/v3/shipping/pickups/${res.body.id}`, { key })).body).toEqual(res.body);
    expect((await http(`/v3/shipping/test_clocks/${clock}`, { key })).body).toMatchObject({ id: clock, object: 'shipping_test_clock', frozen_time: '2025-03-03T10:00:00.000Z' });
    expect((await shipment(http, key, a.id)).pickup_id).toBe(res.body.id);
    const twice = await http('/v3/shipping/pickup/schedule', { key, body: body({ shipment_ids: [b.id] }) });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ code: 'pickup_already_scheduled', pickup_id: res.body.id });
    const cancelled = await http(`/v3/shipping/pickups/${res.body.id}/cancel`, { key, method: 'POST' });
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect((await shipment(http, key, a.id)).pickup_id).toBeNull();
    expect((await http(`/v3/shipping/pickups/${res.body.id}/cancel`, { key, method: 'POST' })).status).toBe(409);
  });
});

describe('EasyPost through its SDK, against a local server in EasyPost\'s shapes', () => {
  it('quotes, buys the label, follows the tracker by polling and by signed webhook', async () => {
    const rates = await http('/v3/shipping/rates?origin_postal=07102&destination_postal=62701&weight=1&carrier=easypost', { key });
    expect(rates.status, rates.text).toBe(200);
    expect(rates.body.rates.map((r: any) => [r.service_level, r.amount])).toEqual([['ground', 758], ['express', 945], ['overnight', 3125]]);

    const { orderId } = await newOrder(http, key);
    const s = await ship(http, key, orderId, { carrier: 'easypost', service_level: 'express' });
    expect(s).toMatchObject({ carrier: 'easypost', status: 'label_created', rate: { amount: 945, currency: 'USD', estimated_days: 2 } });
    expect(s.tracking_number).toMatch(/^9400/);
    const created = easypost.requests.find((r) => r.path === '/v2/shipments' && r.body.shipment.reference === s.id);
    expect(created?.body.shipment).toMatchObject({ to_address: { zip: '62701', country: 'US' }, parcel: { weight: 70.55 } });

    easypost.track(s.tracking_number, [
      { status: 'in_transit', status_detail: 'picked_up', message: 'Picked up', datetime: '2025-03-04T09:00:00Z' },
      { status: 'in_transit', message: 'Arrived at facility', datetime: '2025-03-05T09:00:00Z' },
    ]);
    await eventually(async () => (await shipment(http, key, s.id)).status === 'in_transit', 15_000, 'polled in_transit');

    const event = JSON.stringify({
      object: 'Event', id: 'evt_ep_1', description: 'tracker.updated', mode: 'test',
      result: { object: 'Tracker', tracking_code: s.tracking_number, status: 'delivered', tracking_details: [
        { object: 'TrackingDetail', status: 'delivered', message: 'Delivered', datetime: '2025-03-06T15:00:00Z', tracking_location: { city: 'SPRINGFIELD', state: 'IL', country: 'US' } },
      ] },
    });
    const forged = await http('/v3/shipping/carriers/easypost/events', { key, method: 'POST', rawBody: event, headers: { 'content-type': 'application/json', 'x-hmac-signature': 'hmac-sha256-hex=00' } });
    expect(forged.status).toBe(401);
    const pushed = await http('/v3/shipping/carriers/easypost/events', { key, method: 'POST', rawBody: event, headers: { 'content-type': 'application/json', 'x-hmac-signature': easypost.sign(event) } });
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body).toMatchObject({ carrier: 'easypost', event_id: 'evt_ep_1', shipment_id: s.id, duplicate: false });
    await eventually(async () => (await shipment(http, key, s.id)).status === 'delivered', 15_000, 'pushed delivered');
    const replay = await http('/v3/shipping/carriers/easypost/events', { key, method: 'POST', rawBody: event, headers: { 'content-type': 'application/json', 'x-hmac-signature': easypost.sign(event) } });
    expect(replay.body.duplicate).toBe(true);
    await eventually(async () => (await http(`/v3/orders/${orderId}`, { key })).body.status === 'fulfilled', 10_000, 'order fulfilled');

    const { orderId: next } = await newOrder(http, key);
    const multi = await http('/v3/shipping/create', { key, body: shipmentBody(next, { carrier: 'easypost', packages: [PACKAGE, PACKAGE] }) });
    expect(multi.status).toBe(422);
    expect(paths(multi)).toEqual(['packages']);
    const bad = await http('/v3/shipping/create', { key, body: shipmentBody(next, { carrier: 'easypost', destination: { ...DESTINATION, postal_code: '00000' } }) });
    expect(bad.status, bad.text).toBe(422);
    expect(bad.body.code).toBe('address_rejected');

    // A pickup through EasyPost (Pickup create + buy), then cancel it and void the label (Shipment refund).
    const second = await ship(http, key, next, { carrier: 'easypost', service_level: 'ground' });
    let day = new Date(Date.now() + 86_400_000);
    while (day.getUTCDay() === 0 || day.getUTCDay() === 6) day = new Date(day.getTime() + 86_400_000);
    const pickup = await http('/v3/shipping/pickup/schedule', { key, body: {
      shipment_ids: [second.id], pickup_date: day.toISOString().slice(0, 10), time_window: { start: '09:00', end: '11:00' }, contact: { name: 'Dock', phone: '+442071838750' },
    } });
    expect(pickup.status, pickup.text).toBe(201);
    expect(pickup.body).toMatchObject({ carrier: 'easypost', confirmation_number: 'WTC60012345' });
    expect(easypost.requests.find((r) => r.path === '/v2/pickups')?.body.pickup).toMatchObject({ reference: pickup.body.id, shipment: { id: expect.stringMatching(/^shp_/) } });
    expect((await http(`/v3/shipping/pickups/${pickup.body.id}/cancel`, { key, method: 'POST' })).body.status).toBe('cancelled');
    const voided = await http(`/v3/shipping/${second.id}/cancel`, { key, method: 'POST' });
    expect(voided.status, voided.text).toBe(200);
    expect(voided.body.status).toBe('cancelled');
    expect(easypost.requests.some((r) => /\/v2\/shipments\/shp_[0-9a-f]+\/refund$/.test(r.path))).toBe(true);
  });
});

describe('carriers chosen per account (admin)', () => {
  it('narrows the carriers an account may use and sets its default', async () => {
    const accountId = await platform.newAccount();
    const own = await platform.newKey({ accountId });
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    await caller.shipping.setCarriers({ accountId, livemode: false, defaultCarrier: 'swiftex', enabledCarriers: ['swiftex', 'cargoline'] });
    const { orderId } = await newOrder(http, own);
    const clock = await newClock(http, own, '2025-03-03T10:00:00Z');
    const { carrier: _, ...body } = shipmentBody(orderId, { test_clock: clock });
    const s = await http('/v3/shipping/create', { key: own, body });
    expect(s.status, s.text).toBe(201);
    expect(s.body.carrier).toBe('swiftex');
    const refused = await http('/v3/shipping/create', { key: own, body: { ...body, carrier: 'parcelpoint' } });
    expect(refused.status).toBe(422);
    expect(paths(refused)).toEqual(['carrier']);
    const rates = await http('/v3/shipping/rates?origin_postal=07102&destination_postal=62701&weight=1', { key: own });
    expect(new Set(rates.body.rates.map((r: any) => r.carrier))).toEqual(new Set(['swiftex', 'cargoline']));
    // Other accounts keep every carrier (EasyPost included, configured on this server).
    const all = await http('/v3/shipping/rates?origin_postal=07102&destination_postal=62701&weight=1', { key });
    expect(new Set(all.body.rates.map((r: any) => r.carrier))).toEqual(new Set([...SANDBOX, 'easypost']));
  });
});
