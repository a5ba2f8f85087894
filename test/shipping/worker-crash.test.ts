import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { eventually, newOrder, ship, shipment, tracking } from './support.ts';

// A compressed sandbox journey of ~6 s (label to ETA), polled every 200 ms.
const JOURNEY = { SHIPPING_SANDBOX_JOURNEY_MS: '6000', SHIPPING_SANDBOX_LATENCY_MS: '0' };
Object.assign(process.env, JOURNEY);

let platform: TestPlatform;
let http: Http;
let key: string;
// The order workflow (commerce) and the shipment's (shipping): all this journey needs.
const workers = workerProcesses(() => platform, { ...JOURNEY, WORKER_AREAS: 'shipping,commerce' });

// No in-process worker: the workers are child processes this file can kill.
usePlatform({ env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '5000' } }, (t) => ({ platform, http, key } = t));
afterAll(() => workers.killAll());

describe('a worker killed mid-journey', () => {
  it('loses nothing: another worker carries the shipment to delivered, every scan and event exactly once, the order fulfilled once', async () => {
    const first = await workers.start();
    const replacement = workers.standby();
    const { orderId } = await newOrder(http, key);
    const s = await ship(http, key, orderId, { service_level: 'express' });
    await eventually(async () => ['picked_up', 'in_transit'].includes((await shipment(http, key, s.id)).status), 20_000, 'picked up');
    await workers.kill(first);
    await replacement.start();

    await eventually(async () => (await shipment(http, key, s.id)).status === 'delivered', 45_000, 'delivered after the kill');
    const track = await tracking(http, key, s.id);
    expect(track.tracking_events.map((e: any) => e.status)).toEqual(['label_created', 'picked_up', 'in_transit', 'in_transit', 'out_for_delivery', 'delivered']);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [s.id]);
    expect(events.map((e) => e.type)).toEqual(['shipment.created', 'shipment.picked_up', 'shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered']);
    await eventually(async () => (await http(`/v3/orders/${orderId}`, { key })).body.status === 'fulfilled', 20_000, 'order fulfilled');
    expect(await platform.sql(`select 1 from events where type = 'order.fulfilled' and data->'object'->>'id' = $1`, [orderId])).toHaveLength(1);
  });
});
