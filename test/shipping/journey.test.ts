import { describe, expect, it } from 'vitest';
import { permissionScopes } from '../../domain/registry.ts';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';
import { startReceiver, type Receiver } from '../webhooks/support/receiver.ts';
import { advance, eventually, newClock, newOrder, ship, shipment, shipmentBody as shipmentBodyOf, signedPush, tracking } from './support.ts';

// Compressed real time for the one journey without a clock: label to delivered in ~3 s.
useEnv({ SHIPPING_SANDBOX_JOURNEY_MS: '3000', SHIPPING_SANDBOX_LATENCY_MS: '0' });

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
let receiver: Receiver;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '5000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } }, async (t) => {
  ({ platform, http, key, accountId } = t);
  receiver = await startReceiver();
  const res = await http('/v3/webhooks', { key, body: { url: receiver.url, events: ['shipment.created', 'shipment.delivered', 'order.fulfilled', 'order.fulfillment.delayed'] } });
  expect(res.status, res.text).toBe(201);
  receiver.secrets = [res.body.secret];
});

const MONDAY = '2025-03-03T10:00:00Z';

async function eventsOf(id: string, type?: string) {
  const rows = await platform.sql<{ type: string; data: any }>(
    `select type, data from events where (data->'object'->>'id' = $1 or data->'shipment_delay'->>'shipment_id' = $1) ${type ? 'and type = $2' : ''} order by id`, type ? [id, type] : [id]);
  return rows;
}

async function order(id: string) {
  const res = await http(`/v3/orders/${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('a shipment\'s journey on a test clock', () => {
  it('happy path: label, scans in order, delivered; the order shows the tracking number, then is fulfilled; webhooks sent', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const created = await ship(http, key, orderId, { test_clock: clock });
    expect(created).toMatchObject({
      object: 'shipment', status: 'label_created', carrier: 'parcelpoint', service_level: 'ground', order_id: orderId, test_clock: clock,
      estimated_delivery: '2025-03-11T20:00:00.000Z', workflow_id: `shipment-${created.id}`,
    });
    expect(created.id).toMatch(/^shp_/);
    expect(created.tracking_number).toMatch(/^PP\d{16}$/);
    expect(created.label_url).toContain(created.tracking_number);
    expect(created.rate.amount).toBeGreaterThan(0);
    await eventually(async () => (await order(orderId)).fulfillment.tracking_number === created.tracking_number, 10_000, 'order tracking number');

    await advance(http, key, clock, '2025-03-06T12:00:00Z');
    const midway = await shipment(http, key, created.id);
    expect(['picked_up', 'in_transit']).toContain(midway.status);

    await advance(http, key, clock, '2025-03-12T00:00:00Z');
    const done = await shipment(http, key, created.id);
    expect(done.status).toBe('delivered');
    expect(done.delivered_at).not.toBeNull();
    const track = await tracking(http, key, created.id);
    expect(track).toMatchObject({ shipment_id: created.id, tracking_number: created.tracking_number, status: 'delivered', carrier: 'parcelpoint' });
    expect(track.tracking_events.map((e: any) => e.status)).toEqual(['label_created', 'picked_up', 'in_transit', 'in_transit', 'out_for_delivery', 'delivered']);
    const times = track.tracking_events.map((e: any) => e.timestamp);
    expect([...times].sort()).toEqual(times);
    expect((await eventsOf(created.id)).map((e) => e.type)).toEqual([
      'shipment.created', 'shipment.picked_up', 'shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered',
    ]);
    const fulfilled = await eventually(async () => {
      const o = await order(orderId);
      return o.status === 'fulfilled' ? o : null;
    }, 10_000, 'order fulfilled');
    expect(fulfilled.fulfillment).toMatchObject({ status: 'fulfilled', tracking_number: created.tracking_number, carrier: 'parcelpoint' });
    await eventually(async () => {
      const types = receiver.received.map((r) => `${r.json?.type}:${r.json?.data?.object?.id}`);
      return types.includes(`shipment.delivered:${created.id}`) && types.includes(`order.fulfilled:${orderId}`);
    }, 20_000, 'webhooks');
    const delivered = receiver.received.find((r) => r.json?.type === 'shipment.delivered')!;
    expect(delivered.verifyError).toBeNull();
    expect(delivered.json.data.object).toMatchObject({ id: created.id, status: 'delivered' });
    await platform.temporal.client.workflow.getHandle(created.workflow_id).result();
    const desc = await platform.temporal.client.workflow.getHandle(created.workflow_id).describe();
    expect(desc.searchAttributes).toMatchObject({ BpResourceId: [created.id], BpMode: ['test'], BpStatus: ['delivered'], BpAccountId: [accountId] });
  });
});

describe('sandbox scenarios (metadata.sandbox_scenario)', () => {
  it('delayed: one ETA slip, announced once with order.fulfillment.delayed, then delivered', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock, metadata: { sandbox_scenario: 'delayed' } });
    await advance(http, key, clock, '2025-03-08T00:00:00Z');
    const slipped = await shipment(http, key, s.id);
    expect(slipped).toMatchObject({ status: 'in_transit', estimated_delivery: '2025-03-12T20:00:00.000Z', original_estimated_delivery: '2025-03-11T20:00:00.000Z' });
    await advance(http, key, clock, '2025-03-11T21:00:00Z');
    await advance(http, key, clock, '2025-03-13T00:00:00Z');
    expect((await shipment(http, key, s.id)).status).toBe('delivered');
    const delays = await eventsOf(s.id, 'order.fulfillment.delayed');
    expect(delays).toHaveLength(1);
    expect(delays[0]!.data.object).toMatchObject({ id: orderId, object: 'order' });
    expect(delays[0]!.data.shipment_delay).toEqual({
      shipment_id: s.id, previous_estimated_delivery: '2025-03-11T20:00:00.000Z', new_estimated_delivery: '2025-03-12T20:00:00.000Z', reason: 'carrier_updated_eta',
    });
    await eventually(async () => receiver.received.some((r) => r.json?.type === 'order.fulfillment.delayed' && r.json.data.shipment_delay?.shipment_id === s.id), 20_000, 'delayed webhook');
  });

  it('exception: an address problem, then returned to sender; the order is not fulfilled', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock, metadata: { sandbox_scenario: 'exception' } });
    await advance(http, key, clock, '2025-03-09T00:00:00Z');
    expect((await shipment(http, key, s.id)).status).toBe('exception');
    await advance(http, key, clock, '2025-03-12T00:00:00Z');
    expect((await shipment(http, key, s.id)).status).toBe('returned_to_sender');
    expect((await eventsOf(s.id)).map((e) => e.type)).toEqual([
      'shipment.created', 'shipment.picked_up', 'shipment.in_transit', 'shipment.exception', 'shipment.returned_to_sender',
    ]);
    expect((await order(orderId)).status).toBe('processing');
  });

  it('lost: no scan after in_transit; the passing ETA is one slip (never repeated), later an exception', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock, metadata: { sandbox_scenario: 'lost' } });
    await advance(http, key, clock, '2025-03-11T19:00:00Z');
    expect(await eventsOf(s.id, 'order.fulfillment.delayed')).toHaveLength(0);
    await advance(http, key, clock, '2025-03-11T21:00:00Z');
    expect(await shipment(http, key, s.id)).toMatchObject({ status: 'in_transit', estimated_delivery: null });
    await advance(http, key, clock, '2025-03-13T00:00:00Z');
    const delays = await eventsOf(s.id, 'order.fulfillment.delayed');
    expect(delays).toHaveLength(1);
    expect(delays[0]!.data.shipment_delay).toMatchObject({ previous_estimated_delivery: '2025-03-11T20:00:00.000Z', new_estimated_delivery: null, reason: 'eta_passed' });
    await advance(http, key, clock, '2025-03-15T00:00:00Z');
    expect((await shipment(http, key, s.id)).status).toBe('exception');
    expect(await eventsOf(s.id, 'order.fulfillment.delayed')).toHaveLength(1);
  });

  it('runs in compressed real time without a test clock (label to delivered in seconds)', async () => {
    const { orderId } = await newOrder(http, key);
    const s = await ship(http, key, orderId, { service_level: 'express' });
    expect(s.test_clock).toBeNull();
    await eventually(async () => (await shipment(http, key, s.id)).status === 'delivered', 20_000, 'compressed delivery');
    expect((await eventsOf(s.id)).map((e) => e.type)).toEqual([
      'shipment.created', 'shipment.picked_up', 'shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered',
    ]);
  });
});

describe('carrier pushes', () => {
  it('verifies the signature, stores out-of-order scans sorted, never moves backwards, and takes each event id once', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock });
    const push = (id: string, scans: any[], sign = true) => {
      const body = { id, type: 'tracking.updated', tracking_number: s.tracking_number, scans };
      const signed = signedPush('parcelpoint', body);
      // Forged: the signature's first character changed (to another one: it may already be 0).
      if (!sign) signed.headers['bp-carrier-signature'] = signed.headers['bp-carrier-signature']!.replace(/v1=(.)/, (_, c: string) => `v1=${c === '0' ? '1' : '0'}`);
      return http('/v3/shipping/carriers/parcelpoint/events', { key, method: 'POST', rawBody: signed.rawBody, headers: signed.headers });
    };
    const inTransit = { id: 'scan-2', status: 'in_transit', timestamp: '2025-03-05T08:00:00Z', location: 'Newark hub', description: 'Departed' };
    const pickedUp = { id: 'scan-1', status: 'picked_up', timestamp: '2025-03-04T08:00:00Z', location: 'Newark', description: 'Picked up' };

    const forged = await push('cev_forged', [inTransit], false);
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('carrier_signature_invalid');

    const first = await push('cev_1', [inTransit]);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ shipment_id: s.id, event_id: 'cev_1', duplicate: false });
    await eventually(async () => (await shipment(http, key, s.id)).status === 'in_transit', 10_000, 'in_transit');

    const late = await push('cev_2', [pickedUp]);
    expect(late.body.duplicate).toBe(false);
    const again = await push('cev_2', [pickedUp]);
    expect(again.body.duplicate).toBe(true);
    await eventually(async () => (await tracking(http, key, s.id)).tracking_events.length === 3, 10_000, 'late scan stored');
    const track = await tracking(http, key, s.id);
    expect(track.status).toBe('in_transit');
    expect(track.tracking_events.map((e: any) => e.status)).toEqual(['label_created', 'picked_up', 'in_transit']);

    await push('cev_3', [{ id: 'scan-3', status: 'delivered', timestamp: '2025-03-06T15:00:00Z', location: 'Springfield', description: 'Delivered' }, inTransit]);
    await eventually(async () => (await shipment(http, key, s.id)).status === 'delivered', 10_000, 'delivered');
    expect((await eventsOf(s.id)).map((e) => e.type)).toEqual(['shipment.created', 'shipment.in_transit', 'shipment.delivered']);
    const stale = signedPush('parcelpoint', { id: 'cev_4', tracking_number: s.tracking_number, scans: [] }, Date.now() - 3600_000);
    expect((await http('/v3/shipping/carriers/parcelpoint/events', { key, method: 'POST', rawBody: stale.rawBody, headers: stale.headers })).status).toBe(401);
  });
});

describe('orders, cancellation and operations', () => {
  it('fulfils the order once every one of its shipments is delivered', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const fast = await ship(http, key, orderId, { test_clock: clock, service_level: 'overnight' });
    const slow = await ship(http, key, orderId, { test_clock: clock });
    await advance(http, key, clock, '2025-03-05T00:00:00Z');
    expect((await shipment(http, key, fast.id)).status).toBe('delivered');
    expect((await shipment(http, key, slow.id)).status).not.toBe('delivered');
    expect((await order(orderId)).status).toBe('processing');
    await advance(http, key, clock, '2025-03-12T00:00:00Z');
    await eventually(async () => (await order(orderId)).status === 'fulfilled', 10_000, 'order fulfilled');
    const list = await http(`/v3/shipping?order_id=${orderId}&status=delivered`, { key });
    expect(list.body.data.map((x: any) => x.id).sort()).toEqual([fast.id, slow.id].sort());
    const fulfilledEvents = await platform.sql(`select 1 from events where type = 'order.fulfilled' and data->'object'->>'id' = $1`, [orderId]);
    expect(fulfilledEvents).toHaveLength(1);
  });

  it('cancels only before pickup, voiding the label', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock });
    const cancelled = await http(`/v3/shipping/${s.id}/cancel`, { key, method: 'POST' });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect(cancelled.body.cancelled_at).not.toBeNull();
    const twice = await http(`/v3/shipping/${s.id}/cancel`, { key, method: 'POST' });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'cancelled' });

    const moving = await ship(http, key, orderId, { test_clock: clock });
    await advance(http, key, clock, '2025-03-04T12:00:00Z');
    const late = await http(`/v3/shipping/${moving.id}/cancel`, { key, method: 'POST' });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'picked_up' });
    expect((await eventsOf(s.id)).map((e) => e.type)).toEqual(['shipment.created', 'shipment.cancelled']);
  });

  it('admin: finds a shipment, reads its live state, marks an exception and delivers it by hand, recording who and why', async () => {
    const { orderId } = await newOrder(http, key);
    const clock = await newClock(http, key, MONDAY);
    const s = await ship(http, key, orderId, { test_clock: clock });
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    const ref = { accountId, livemode: false, shipmentId: s.id };
    const found = await caller.shipping.findShipment({ trackingNumber: s.tracking_number });
    expect(found).toEqual([{ account_id: accountId, shipment: expect.objectContaining({ id: s.id }) }]);
    await caller.shipping.markException({ ...ref, operator: 'ops@example.com', reason: 'Parcel damaged at the depot' });
    expect((await shipment(http, key, s.id)).status).toBe('exception');
    const described = await caller.shipping.describeShipment(ref);
    expect(described.workflow).toMatchObject({ workflow_id: `shipment-${s.id}`, status: 'RUNNING' });
    expect(described.state).toMatchObject({ status: 'exception' });
    const steered = await caller.shipping.markDelivered({ ...ref, operator: 'ops@example.com', reason: 'Customer confirmed receipt' });
    expect(steered.shipment.status).toBe('delivered');
    const actions = await platform.sql<{ action: string; operator: string; reason: string }>('select action, operator, reason from shipping_admin_actions where shipment_id = $1 order by id', [s.id]);
    expect(actions).toEqual([
      { action: 'mark_exception', operator: 'ops@example.com', reason: 'Parcel damaged at the depot' },
      { action: 'mark_delivered', operator: 'ops@example.com', reason: 'Customer confirmed receipt' },
    ]);
    await expect(caller.shipping.repoll({ ...ref, operator: 'ops', reason: 'again please' })).rejects.toThrow(/delivered/);
    const wfs = await eventually(async () => {
      const list = await caller.shipping.searchWorkflows({ resourceId: s.id });
      return list.length ? list : null;
    }, 15_000, 'visibility');
    expect(wfs[0]!.workflow_id).toBe(`shipment-${s.id}`);
  });
});

describe('live mode', () => {
  it('uses no sandbox carrier: with no real carrier configured, create and rates are 503 carrier_not_configured; test clocks are test-mode only', async () => {
    const live = await platform.newKey({ accountId, type: 'live' });
    const { orderId } = await newOrder(http, live);
    const res = await http('/v3/shipping/create', { key: live, body: { ...shipmentBodyOf(orderId), carrier: undefined } });
    expect(res.status, res.text).toBe(503);
    expect(res.body.code).toBe('carrier_not_configured');
    expect(res.headers.get('retry-after')).toBeTruthy();
    const rates = await http('/v3/shipping/rates?origin_postal=07102&destination_postal=62701&weight=1', { key: live });
    expect(rates.status).toBe(503);
    const clock = await http('/v3/shipping/test_clocks', { key: live, body: {} });
    expect(clock.status).toBe(403);
    expect(clock.body.code).toBe('test_mode_only');
    expect(await platform.sql('select 1 from shipping_shipments where order_id = $1', [orderId])).toHaveLength(0);
  });
});
