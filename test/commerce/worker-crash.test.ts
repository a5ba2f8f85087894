import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { eventually, orderBody, stockOf, stockedProduct, useShopPlatform, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;
const ORDERS = 40;
// The dispatcher runs in every worker process; the order workflows on the commerce queue.
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'platform,commerce' });

// No in-process worker: the API alone takes the orders, and the workers are child processes this file can kill.
useShopPlatform({ env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http, key, shop } = t));
afterAll(() => workers.killAll());

const confirmed = async (ids: string[]) => (await platform.sql<{ n: number }>(
  'select count(*)::int as n from orders where id = any($1) and workflow_confirmed_at is not null', [ids]))[0]!.n;

describe('order workflows and the workers that start them', () => {
  it('orders taken while no worker runs get one workflow each once one does, also when it dies mid-dispatch', async () => {
    await stockedProduct(http, key, shop, 'CRASH-ORD', 100);
    const placed = await Promise.all(Array.from({ length: ORDERS }, () => http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'CRASH-ORD', quantity: 1 }]) })));
    expect(placed.map((r) => r.status)).toEqual(Array(ORDERS).fill(201));
    const ids = placed.map((r) => r.body.id as string);
    // Taken, stock held, each start waiting in the outbox: no worker has dispatched anything.
    expect(await stockOf(platform, key, 'CRASH-ORD')).toEqual({ quantity: 100, reserved: ORDERS });
    expect(await confirmed(ids)).toBe(0);
    const waiting = await platform.sql(`select 1 from events where type = 'order.created' and dispatched_at is null and data->'object'->>'id' = any($1)`, [ids]);
    expect(waiting).toHaveLength(ORDERS);

    // A worker starts dispatching and is SIGKILLed once the first workflows run; another takes over.
    const first = await workers.start();
    const replacement = workers.standby();
    await eventually(async () => (await confirmed(ids)) > 0, 30_000, 'the first order workflows');
    await workers.kill(first);
    await replacement.start();
    await eventually(async () => (await confirmed(ids)) === ORDERS, 60_000, 'every order workflow');

    // One workflow run per order, none twice.
    const runs = await eventually(async () => {
      const found: string[] = [];
      for await (const w of platform.temporal.client.workflow.list({ query: `BpCustomerId = '${shop.customerId}'` })) {
        if (w.workflowId.startsWith('order-')) found.push(w.workflowId);
      }
      return found.length >= ORDERS ? found : null;
    }, 20_000, 'the workflows in visibility');
    expect(runs.sort()).toEqual(ids.map((id) => `order-${id}`).sort());
    const dispatched = await platform.sql(`select 1 from events where type = 'order.created' and dispatched_at is not null and data->'object'->>'id' = any($1)`, [ids]);
    expect(dispatched).toHaveLength(ORDERS);
    expect(await stockOf(platform, key, 'CRASH-ORD')).toEqual({ quantity: 100, reserved: ORDERS });
  });
});
