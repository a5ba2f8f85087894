import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import type { TestPlatform } from '../support/platform.ts';
import { deliveryStarted } from './support/dispatch.ts';
import { eventually, startReceiver, type Receiver } from './support/receiver.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

usePlatform({
  worker: true, ownAccount: true,
  env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms', WEBHOOK_TIMEOUT_MS: '2000', EVENT_DISPATCH_SWEEP_MS: '500' },
}, (t) => ({ platform, http, accountId, key } = t));
afterAll(async () => {
  for (const r of receivers) await r.close();
});

async function newCustomer(): Promise<string> {
  const res = await http('/v3/customers', { key, body: { email: `c${Math.random().toString(36).slice(2)}@example.com`, first_name: 'Ada' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newEndpoint(r: Receiver, events: string[] = ['customer.updated'], extra: Record<string, unknown> = {}) {
  const res = await http('/v3/webhooks', { key, body: { url: r.url, events, ...extra } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  r.secrets = [res.body.secret];
  return res.body as { id: string; secret: string };
}

/** Records an event the way a domain service does: in a transaction, through recordEvent. */
async function emit(type: Parameters<typeof recordEvent>[2]['type'], object: Record<string, unknown>): Promise<string> {
  const em = scopedEm(platform.orm, { accountId, livemode: false });
  const event = recordEvent(em, { accountId, livemode: false }, { type, object });
  await em.flush();
  return event.id;
}

async function deliveriesOf(endpointId: string, query = ''): Promise<any[]> {
  const res = await http(`/v3/webhooks/${endpointId}/deliveries${query}`, { key });
  expect(res.status).toBe(200);
  return res.body.deliveries;
}

describe('delivering events to endpoints', () => {
  it('delivers customer.updated, signed per Standard Webhooks, with customer_metrics', async () => {
    const r = await receiver();
    const endpoint = await newEndpoint(r);
    const customerId = await newCustomer();
    const patched = await http(`/v3/customers/${customerId}`, { key, method: 'PATCH', body: { first_name: 'Grace' } });
    expect(patched.status).toBe(200);

    const [got] = await r.waitFor(1);
    expect(got!.verifyError).toBeNull();
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.json).toMatchObject({
      object: 'event', type: 'customer.updated', livemode: false,
      data: { object: { id: customerId, first_name: 'Grace' }, previous_attributes: { first_name: 'Ada' } },
      customer_metrics: { total_ltv: expect.any(Number), engagement_score: expect.any(Number), lifecycle_stage: expect.any(String) },
    });
    expect(got!.headers['webhook-id']).toBe(got!.json.id);
    expect(Math.abs(Number(got!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);

    const [delivery] = await eventually(async () => {
      const rows = await deliveriesOf(endpoint.id);
      return rows[0]?.status === 'delivered' ? rows : null;
    });
    expect(delivery).toMatchObject({
      object: 'webhook_delivery', webhook_id: endpoint.id, event_id: got!.json.id, event_type: 'customer.updated', status: 'delivered',
      http_status: 200, attempts: 1, next_retry: null, workflow_id: `webhook-delivery-${got!.json.id}-${endpoint.id}`,
    });
    expect(Date.parse(delivery.delivered_at)).toBeGreaterThan(0);
    expect(delivery.response_time).toEqual(expect.any(Number));

    const event = await http(`/v3/events/${got!.json.id}`, { key });
    expect(event.body).toMatchObject({ id: got!.json.id, type: 'customer.updated', customer_id: customerId, customer_metrics: got!.json.customer_metrics });
    expect(event.body.dispatched_at).toEqual(expect.any(String));
    const detail = await http(`/v3/webhooks/${endpoint.id}/deliveries/${delivery.id}`, { key });
    expect(detail.body.attempt_history).toEqual([expect.objectContaining({ number: 1, outcome: 'delivered', http_status: 200, response_excerpt: 'ok' })]);
  });

  it('fans each event out to every subscribed endpoint (by kind or "*"), once each', async () => {
    const [a, b, c] = [await receiver(), await receiver(), await receiver()];
    const ea = await newEndpoint(a, ['order.created']);
    await newEndpoint(b, ['*']);
    const ec = await newEndpoint(c, ['payment.succeeded']);
    await http(`/v3/webhooks/${ec.id}`, { key, method: 'PATCH', body: { events: ['payment.succeeded', 'order.created'], enabled: false } });

    const orderEvent = await emit('order.created', { id: 'ord_1', object: 'order' });
    const paymentEvent = await emit('payment.succeeded', { id: 'pay_1', object: 'payment' });
    await a.waitFor(1);
    await b.waitFor(2);
    expect(a.received.map((x) => x.json.id)).toEqual([orderEvent]);
    expect(b.received.map((x) => x.json.id).sort()).toEqual([orderEvent, paymentEvent].sort());
    expect([...a.received, ...b.received].every((x) => x.verifyError === null)).toBe(true);
    expect((await deliveriesOf(ea.id)).map((d) => d.event_id)).toEqual([orderEvent]);
    // Disabled: once both events are dispatched (to a and b), no delivery to c was ever started.
    expect(await deliveryStarted(platform, orderEvent, ec.id)).toBe(false);
    expect(await deliveryStarted(platform, paymentEvent, ec.id)).toBe(false);
    expect(c.received).toHaveLength(0);
  });

  it('starts nothing twice when the dispatcher sees an event again (a crash before it marked the event dispatched)', async () => {
    const r = await receiver();
    const endpoint = await newEndpoint(r, ['inventory.low_stock']);
    const eventId = await emit('inventory.low_stock', { object: 'inventory_level', sku: 'MUG' });
    await r.waitFor(1);
    await eventually(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'delivered');
    await eventually(async () => (await platform.sql('select 1 from events where id = $1 and dispatched_at is not null', [eventId])).length > 0);

    await platform.sql('update events set dispatched_at = null where id = $1', [eventId]);
    await eventually(async () => (await platform.sql('select 1 from events where id = $1 and dispatched_at is not null', [eventId])).length > 0);
    const next = await emit('inventory.low_stock', { object: 'inventory_level', sku: 'CUP' });
    await r.waitFor(2);
    expect(r.received.map((x) => x.json.id)).toEqual([eventId, next]);
    expect(await deliveriesOf(endpoint.id)).toHaveLength(2);
  });

  it('picks up events by the periodic sweep when no notification arrives', async () => {
    const r = await receiver();
    await newEndpoint(r, ['invoice.paid']);
    await platform.sql('alter table events disable trigger events_notify');
    try {
      const eventId = await emit('invoice.paid', { id: 'inv_1', object: 'invoice' });
      const [got] = await r.waitFor(1, 10_000);
      expect(got!.json.id).toBe(eventId);
    } finally {
      await platform.sql('alter table events enable trigger events_notify');
    }
  });

  it('signs with both secrets for 24 hours after a rotation; each verifies on its own', async () => {
    const r = await receiver();
    const endpoint = await newEndpoint(r, ['subscription.created']);
    const rotated = await http(`/v3/webhooks/${endpoint.id}/rotate-secret`, { key, method: 'POST' });
    expect(rotated.status).toBe(200);
    r.secrets = [endpoint.secret, rotated.body.secret]; // the receiver checks the delivery against each, independently
    await emit('subscription.created', { id: 'sub_1', object: 'subscription' });
    const [got] = await r.waitFor(1);
    expect(got!.verifyError).toBeNull();
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);

    // Once the overlap is over, only the new secret signs.
    await platform.sql(`update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = $1`, [endpoint.id]);
    r.secrets = [rotated.body.secret];
    await emit('subscription.created', { id: 'sub_2', object: 'subscription' });
    const [, second] = await r.waitFor(2);
    expect(second!.verifyError).toBeNull();
    expect(String(second!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(endpoint.secret).verify(second!.body, second!.headers as Record<string, string>)).toThrow();
  });

  it('sends a test event at once and returns its delivery record', async () => {
    const r = await receiver();
    const endpoint = await newEndpoint(r, ['order.created']);
    const res = await http(`/v3/webhooks/${endpoint.id}/test`, { key, body: { event_type: 'order.fulfillment.delayed' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'webhook_delivery', webhook_id: endpoint.id, event_type: 'order.fulfillment.delayed', status: 'delivered', http_status: 200, attempts: 1, test: true });
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.verifyError).toBeNull();
    expect(r.received[0]!.json).toMatchObject({ id: res.body.event_id, type: 'order.fulfillment.delayed', data: { object: { object: 'order' } }, customer_metrics: expect.any(Object) });

    const custom = await http(`/v3/webhooks/${endpoint.id}/test`, { key, body: { event_type: 'customer.updated', test_data: { hello: 'world' } } });
    expect(custom.status).toBe(200);
    expect(r.received[1]!.json.data).toEqual({ object: { hello: 'world' } });

    const bad = await http(`/v3/webhooks/${endpoint.id}/test`, { key, body: { event_type: 'customer.exploded' } });
    expect(bad.status).toBe(422);
    expect((await http('/v3/webhooks/whk_01jpa83q7s9v1x3z5b7d9f1h3k/test', { key, body: { event_type: 'order.created' } })).status).toBe(404);
    // Test events are not listed among real events.
    const events = await http('/v3/events?type=order.fulfillment.delayed', { key });
    expect(events.body.data.map((e: { id: string }) => e.id)).not.toContain(res.body.event_id);
  });

  it('lists deliveries in the spec shape, filtered by status and paginated', async () => {
    const r = await receiver();
    r.reply = (req) => (req.json?.data?.object?.n % 2 === 0 ? { status: 200 } : { status: 410 });
    const endpoint = await newEndpoint(r, ['payment.refunded']);
    // 410 disables the endpoint, so send the failing one last.
    for (const n of [0, 2, 4]) await emit('payment.refunded', { id: `pay_${n}`, object: 'payment', n });
    await r.waitFor(3);
    await eventually(async () => (await deliveriesOf(endpoint.id, '?status=delivered')).length === 3);
    await emit('payment.refunded', { id: 'pay_5', object: 'payment', n: 5 });
    await r.waitFor(4);
    await eventually(async () => (await deliveriesOf(endpoint.id, '?status=failed')).length === 1);

    const page = await http(`/v3/webhooks/${endpoint.id}/deliveries?limit=2&status=delivered`, { key });
    expect(page.body).toMatchObject({ object: 'list', has_more: true });
    expect(page.body.deliveries).toHaveLength(2);
    expect(page.body.data).toEqual(page.body.deliveries);
    const rest = await http(`/v3/webhooks/${endpoint.id}/deliveries?limit=2&status=delivered&cursor=${page.body.next_cursor}`, { key });
    expect(rest.body.deliveries).toHaveLength(1);
    expect(rest.body.has_more).toBe(false);
    const all = [...page.body.deliveries, ...rest.body.deliveries];
    expect(new Set(all.map((d: { id: string }) => d.id)).size).toBe(3);
    expect(all.every((d: { status: string }) => d.status === 'delivered')).toBe(true);
    expect((await http(`/v3/webhooks/${endpoint.id}/deliveries?status=lost`, { key })).status).toBe(422);
  });
});
