import { describe, expect, it } from 'vitest';
import { permissionScopes } from '../../domain/registry.ts';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { startReceiver, type Receiver } from '../webhooks/support/receiver.ts';
import { advance, eventually, newClock, newOrder, ship, shipment, signedPush, tracking } from './support.ts';

// Compressed real time for the one journey without a clock: label to delivered in ~3 s.
process.env.SHIPPING_SANDBOX_JOURNEY_MS = '3000';
process.env.SHIPPING_SANDBOX_LATENCY_MS = '0';

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
