import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { openShop, orderBody, stockOf, stockedProduct } from '../commerce/support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

// Nothing listens on port 1: Temporal is "down" for this API.
usePlatform({ env: { TEMPORAL_ADDRESS: '127.0.0.1:1' } }, (t) => ({ platform, http, key } = t));

describe('while Temporal is unreachable', () => {
  it('reports not ready', async () => {
    const ready = await http('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ postgres: true, temporal: false, worker_polling: false });
  });

  it('answers endpoints that need it with 503 service_unavailable and writes nothing', async () => {
    const res = await http('/v3/payments/process', {
      key,
      headers: { 'idempotency-key': 'down-1' },
      body: { amount: 1999, currency: 'USD', payment_method: { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: 2030, cvc: '123' } } },
    });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('service_unavailable');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await platform.sql('select 1 from payments')).toHaveLength(0);
    // The idempotency key is free again, so the client's retry will run once Temporal is back.
    expect(await platform.sql('select 1 from idempotency_records')).toHaveLength(0);
  });

  it('keeps serving what does not need it', async () => {
    const created = await http('/v3/customers', { key, body: { name: 'Still here' } });
    expect(created.status).toBe(201);
  });

  it('takes orders: the stock is reserved now, and order.created waits in the outbox to start the workflow', async () => {
    const shop = await openShop(http, key);
    await stockedProduct(http, key, shop, 'DOWN-1', 3);
    const res = await http('/v3/orders', { key, headers: { 'idempotency-key': 'down-order' }, body: orderBody(shop, [{ sku: 'DOWN-1', quantity: 2 }]) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'processing', workflow_id: `order-${res.body.id}` });
    expect(await stockOf(platform, key, 'DOWN-1')).toEqual({ quantity: 3, reserved: 2 });
    const [event] = await platform.sql<{ dispatched: boolean }>(
      `select dispatched_at is not null as dispatched from events where type = 'order.created' and data->'object'->>'id' = $1`, [res.body.id]);
    expect(event).toEqual({ dispatched: false });
    const retry = await http('/v3/orders', { key, headers: { 'idempotency-key': 'down-order' }, body: orderBody(shop, [{ sku: 'DOWN-1', quantity: 2 }]) });
    expect(retry.body.id).toBe(res.body.id);
    expect(await stockOf(platform, key, 'DOWN-1')).toEqual({ quantity: 3, reserved: 2 });
  });
});
