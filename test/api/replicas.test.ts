import { afterAll, describe, expect, it } from 'vitest';
import { openShop, orderBody, stockOf, stockedProduct, type Shop } from '../commerce/support.ts';
import { apiProcesses } from '../support/api-processes.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

// Two API replicas: the test process's own API and one in a process of its own, sharing only
// PostgreSQL and Temporal (and the worker). What one replica decides, the other must respect.
// Both count with the same limits; the key of the first tests is premium's (5,000 a minute).
const LIMITS = { RATE_LIMIT_CONCURRENCY: '100' };
let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;
let http2: Http;
const apis = apiProcesses(() => platform);

usePlatform({ worker: true, env: LIMITS }, async (t) => {
  ({ platform, http } = t);
  key = await platform.newKey({ accountId: await platform.newAccount('premium') });
  shop = await openShop(http, key);
  http2 = client((await apis.start(LIMITS)).url);
});
afterAll(() => apis.killAll());

/**
 * As a client does: a 503 (Temporal slow or unreachable for a moment on the shared server) is
 * retried with the same Idempotency-Key, which answers what the first attempt did, if anything.
 */
async function retried(h: Http, path: string, opts: Parameters<Http>[1]): ReturnType<Http> {
  for (let attempt = 1; ; attempt++) {
    const res = await h(path, opts);
    if ((res.status !== 503 && !(res.status === 409 && res.body.code === 'idempotency_key_in_use')) || attempt === 10) return res;
    await new Promise((r) => setTimeout(r, 300 * attempt));
  }
}

describe('two API processes on one database', () => {
  it('create one customer when the same Idempotency-Key reaches both at once', async () => {
    for (let i = 0; i < 10; i++) {
      const request = { key, headers: { 'idempotency-key': `replica-customer-${i}` }, body: { email: `replica-${i}@example.com`, name: 'Replica' } };
      const answers = await Promise.all([http('/v3/customers', request), http2('/v3/customers', request)]);
      const created = answers.filter((a) => a.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const a of answers.filter((x) => x.status !== 201)) expect([a.status, a.body.code]).toEqual([409, 'idempotency_key_in_use']);
      expect(new Set(created.map((a) => a.text)).size).toBe(1);
      expect(await platform.sql('select id from customers where email = $1', [`replica-${i}@example.com`])).toHaveLength(1);
    }
  });

  it('place one order (one reservation) when the same Idempotency-Key reaches both at once', async () => {
    await stockedProduct(http, key, shop, 'REPLICA-IDEM', 100);
    for (let i = 0; i < 5; i++) {
      const request = { key, headers: { 'idempotency-key': `replica-order-${i}` }, body: orderBody(shop, [{ sku: 'REPLICA-IDEM', quantity: 1 }], { metadata: { replica: String(i) } }) };
      const answers = await Promise.all([http('/v3/orders', request), http2('/v3/orders', request)]);
      const created = answers.filter((a) => a.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const a of answers.filter((x) => x.status !== 201)) expect([a.status, a.body.code]).toEqual([409, 'idempotency_key_in_use']);
      expect(new Set(created.map((a) => a.body.id)).size).toBe(1);
    }
    const orders = await platform.sql<{ n: number }>(`select count(*)::int as n from orders where line_items @> '[{"sku":"REPLICA-IDEM"}]'`);
    expect(orders[0]!.n).toBe(5);
    expect(await stockOf(platform, key, 'REPLICA-IDEM')).toEqual({ quantity: 100, reserved: 5 });
  });

  it('sell exactly the stock when 40 orders for 10 units arrive through both at once', async () => {
    await stockedProduct(http, key, shop, 'REPLICA-HOT', 10);
    const body = orderBody(shop, [{ sku: 'REPLICA-HOT', quantity: 1 }]);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => retried(i % 2 ? http2 : http, '/v3/orders', { key, body, headers: { 'idempotency-key': `replica-hot-${i}` } })));
    expect(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.text)).toEqual([]);
    expect(results.filter((r) => r.status === 201)).toHaveLength(10);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body).toMatchObject({ code: 'insufficient_stock', sku: 'REPLICA-HOT' });
    expect(await stockOf(platform, key, 'REPLICA-HOT')).toEqual({ quantity: 10, reserved: 10 });
    const orders = await platform.sql<{ n: number }>(`select count(*)::int as n from orders where line_items @> '[{"sku":"REPLICA-HOT"}]'`);
    expect(orders[0]!.n).toBe(10);
  });

  it('hold a key\'s minute limit across both: 100 a minute, not 200', async () => {
    const limited = await platform.newKey({ accountId: await platform.newAccount('standard') });
    // A fresh minute on the windows' clock (see rate-limits.test.ts), shared with a replica started on it.
    const [row] = await platform.sql<{ ms: string }>('select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms');
    platform.rateLimitClock.offsetMs = 60_000 - (Number(row!.ms) % 60_000) + 200;
    const replica = client((await apis.start({ ...LIMITS, RATE_LIMIT_CLOCK_OFFSET_MS: String(platform.rateLimitClock.offsetMs) })).url);
    const statuses: number[] = [];
    for (let batch = 0; batch < 15; batch++) {
      statuses.push(...(await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? replica : http)('/v3/customers?limit=1', { key: limited }).then((r) => r.status)),
      )));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  });
});
