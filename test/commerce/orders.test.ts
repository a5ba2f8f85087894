import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { draftOrder, writeOrder } from '../../domain/commerce/orders.ts';
import { scopedEm } from '../../domain/scope.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { activitySteps } from '../support/histories.ts';
import { eventually, openShop, orderBody, stockOf, stockedProduct, useShopPlatform, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http, key, shop } = t));

const placeOrder = (body: unknown) => http('/v3/orders', { key, body });

describe('POST /v3/orders', () => {
  it('reserves stock, answers in the spec shape, and order.created starts order-<id> with search attributes', async () => {
    await stockedProduct(http, key, shop, 'ORD-MUG', 5, { price: 1250, variants: [{ name: 'Large', price: 1500, features: [] }] });
    // Values the one-message write inlines as literals: quotes, a backslash, a `?` and a semicolon come back as sent.
    const metadata = { ref: 'A1', note: 'O\'Brien? \\ "quoted"; select 1' };
    const res = await placeOrder(orderBody(shop, [{ sku: 'ORD-MUG', quantity: 2 }, { sku: 'ORD-MUG', quantity: 1, variant: 'Large' }], { metadata }));
    expect(res.status).toBe(201);
    const order = res.body;
    expect(res.headers.get('location')).toBe(`/v3/orders/${order.id}`);
    expect(order).toMatchObject({
      object: 'order', store_id: shop.storeId, customer_id: shop.customerId, status: 'processing', payment_status: 'unpaid',
      total_amount: 2 * 1250 + 1500, currency: 'USD',
      line_items: [
        { sku: 'ORD-MUG', quantity: 2, unit_price: 1250, amount: 2500, variant: null, allocations: [{ warehouse_id: shop.warehouseId, quantity: 2 }] },
        { sku: 'ORD-MUG', quantity: 1, unit_price: 1500, amount: 1500, variant: 'Large' },
      ],
      shipping_address: { city: 'Springfield', country: 'US' },
      fulfillment: { status: 'pending', tracking_number: null },
      workflow_id: `order-${order.id}`, metadata,
    });
    expect(order.id).toMatch(/^ord_/);
    expect(await stockOf(platform, key, 'ORD-MUG')).toEqual({ quantity: 5, reserved: 3 });
    expect((await http(`/v3/orders/${order.id}`, { key })).body).toEqual(order);
    // Started by the event dispatcher from order.created (the outbox), not in the request.
    const described = await eventually(() => platform.temporal.client.workflow.getHandle(order.workflow_id).describe().catch(() => null), 20_000, 'the order workflow');
    expect(described.status.name).toBe('RUNNING');
    expect(described.searchAttributes).toMatchObject({
      BpResourceId: [order.id], BpCustomerId: [shop.customerId], BpMode: ['test'], BpAccountId: [expect.stringMatching(/^acct_/)],
    });
    const events = await platform.sql<{ type: string; customer_id: string }>('select type, customer_id from events where data->\'object\'->>\'id\' = $1', [order.id]);
    expect(events).toEqual([{ type: 'order.created', customer_id: shop.customerId }]);
    await eventually(async () => (await platform.sql('select 1 from orders where id = $1 and workflow_confirmed_at is not null', [order.id])).length > 0, 20_000, 'workflow confirmation');
  });

  it('sells exactly the stock when 50 concurrent orders compete for 10 units; stock never goes negative', async () => {
    await stockedProduct(http, key, shop, 'ORD-HOT', 10);
    const results = await Promise.all(Array.from({ length: 50 }, () => placeOrder(orderBody(shop, [{ sku: 'ORD-HOT', quantity: 1 }]))));
    const statuses = results.map((r) => r.status);
    const other = results.filter((r) => r.status !== 201 && r.status !== 409);
    expect(other.map((r) => r.text)).toEqual([]);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(40);
    expect(results.find((r) => r.status === 409)!.body).toMatchObject({ code: 'insufficient_stock', sku: 'ORD-HOT', requested: 1, available: 0 });
    expect(await stockOf(platform, key, 'ORD-HOT')).toEqual({ quantity: 10, reserved: 10 });
    const rows = await platform.sql<{ n: number }>(`select count(*)::int as n from orders where line_items @> '[{"sku":"ORD-HOT"}]'`);
    expect(rows[0]!.n).toBe(10);
    const negative = await platform.sql('select 1 from inventory_levels where quantity < 0 or reserved < 0 or reserved > quantity');
    expect(negative).toEqual([]);
  });

  it('reserves last: an order whose planned warehouse another transaction emptied meanwhile is written again, from another warehouse or refused, with nothing of the first attempt left', async () => {
    // Two warehouses for one SKU; an order for 2 plans the first by id (3 units), and another
    // transaction takes those 3 while the order waits for the row's lock.
    const other = (await http('/v3/warehouses', { key, body: { name: 'Second warehouse' } })).body.id as string;
    const [first, second] = [shop.warehouseId, other].sort();
    await stockedProduct(http, key, shop, 'ORD-PLAN', 0);
    const put = (warehouse: string, quantity: number) => http('/v3/inventory/ORD-PLAN/stock', { key, method: 'PUT', body: { warehouse_id: warehouse, quantity, operation: 'set' } });
    expect((await put(first!, 3)).status).toBe(200);
    expect((await put(second!, 2)).status).toBe(200);
    const takeWhileOrderWaits = async (warehouse: string, units: number, order: () => Promise<any>) => {
      const holder = new pg.Client({ connectionString: platform.dbUrl });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('update inventory_levels set reserved = reserved + $3 where warehouse_id = $1 and sku = $2', [warehouse, 'ORD-PLAN', units]);
        const answer = order();
        const [waiting] = await eventually(async () => {
          const rows = await platform.sql<{ pid: number }>(`select pid from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`);
          return rows.length ? rows : null;
        }, 15_000, 'the order to wait for the stock row');
        // It waits with its order row written already: the stock row is the last thing it locks.
        const wrote = await platform.sql(
          `select 1 from pg_locks l join pg_class c on c.oid = l.relation where l.pid = $1 and c.relname = 'orders' and l.mode = 'RowExclusiveLock'`, [waiting!.pid]);
        expect(wrote).toHaveLength(1);
        await holder.query('commit');
        return await answer;
      } finally {
        await holder.end();
      }
    };
    const placed = await takeWhileOrderWaits(first!, 3, () => placeOrder(orderBody(shop, [{ sku: 'ORD-PLAN', quantity: 2 }], { metadata: { ref: 'overtaken' } })));
    expect(placed.status, placed.text).toBe(201);
    expect(placed.body.line_items[0].allocations).toEqual([{ warehouse_id: second, quantity: 2 }]);
    const orders = await platform.sql<{ id: string }>(`select id from orders where metadata->>'ref' = 'overtaken'`);
    expect(orders.map((o) => o.id)).toEqual([placed.body.id]);
    const created = await platform.sql<{ allocations: unknown }>(`select data->'object'->'line_items'->0->'allocations' as allocations from events where type = 'order.created' and data->'object'->>'id' = $1`, [placed.body.id]);
    expect(created).toEqual([{ allocations: [{ warehouse_id: second, quantity: 2 }] }]);
    expect(await stockOf(platform, key, 'ORD-PLAN')).toEqual({ quantity: 5, reserved: 5 });

    // Now none is left once the other transaction commits: 409, no row, no event.
    expect((await put(second!, 4)).status).toBe(200);
    const refused = await takeWhileOrderWaits(second!, 2, () => placeOrder(orderBody(shop, [{ sku: 'ORD-PLAN', quantity: 1 }], { metadata: { ref: 'refused-after-plan' } })));
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({ code: 'insufficient_stock', sku: 'ORD-PLAN', requested: 1, available: 0 });
    expect(await platform.sql(`select 1 from orders where metadata->>'ref' = 'refused-after-plan'`)).toEqual([]);
    expect(await platform.sql(`select 1 from events where data->'object'->'metadata'->>'ref' = 'refused-after-plan'`)).toEqual([]);
    expect(await stockOf(platform, key, 'ORD-PLAN')).toEqual({ quantity: 7, reserved: 7 });
  });

  it('rolls back every line when one line is short, and names every bad field at once', async () => {
    await stockedProduct(http, key, shop, 'ORD-A', 3);
    await stockedProduct(http, key, shop, 'ORD-B', 1);
    const short = await placeOrder(orderBody(shop, [{ sku: 'ORD-A', quantity: 2 }, { sku: 'ORD-B', quantity: 2 }]));
    expect(short.status).toBe(409);
    expect(await stockOf(platform, key, 'ORD-A')).toEqual({ quantity: 3, reserved: 0 });
    const bad = await placeOrder({ ...orderBody(shop, [{ sku: 'NOPE', quantity: 1 }, { sku: 'ORD-A', quantity: 1, variant: 'XL' }]), customer_id: 'cus_nope' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['customer_id', 'line_items.0.sku', 'line_items.1.variant']);
  });

  it('prices an order in another currency from the stored exchange rate', async () => {
    await stockedProduct(http, key, shop, 'ORD-FX', 2, { price: 1001 });
    await http('/v3/catalog/exchange-rates', { key, method: 'PUT', body: { base: 'USD', rates: { JPY: '150' } } });
    const res = await placeOrder(orderBody(shop, [{ sku: 'ORD-FX', quantity: 2 }], { currency: 'JPY' }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ currency: 'JPY', total_amount: 3004, line_items: [{ unit_price: 1502 }] });
  });
});

describe('order lifecycle through the workflow', () => {
  it('cancel releases the reserved stock (compensation) and records order.canceled; a second cancel is 409', async () => {
    await stockedProduct(http, key, shop, 'ORD-CXL', 4);
    const order = (await placeOrder(orderBody(shop, [{ sku: 'ORD-CXL', quantity: 3 }]))).body;
    expect(await stockOf(platform, key, 'ORD-CXL')).toEqual({ quantity: 4, reserved: 3 });
    const res = await http(`/v3/orders/${order.id}/cancel`, { key, body: { reason: 'customer request' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'canceled', cancellation_reason: 'customer request', fulfillment: { status: 'canceled' } });
    expect(await stockOf(platform, key, 'ORD-CXL')).toEqual({ quantity: 4, reserved: 0 });
    const again = await http(`/v3/orders/${order.id}/cancel`, { key, body: {} });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'canceled' });
    const result = await platform.temporal.client.workflow.getHandle(order.workflow_id).result();
    expect(result).toMatchObject({ status: 'canceled' });
    expect((await platform.sql('select 1 from events where type = $1 and data->\'object\'->>\'id\' = $2', ['order.canceled', order.id])).length).toBe(1);
  });

  it('fulfil consumes the reservation, records order.fulfilled and ends the workflow', async () => {
    await stockedProduct(http, key, shop, 'ORD-SHIP', 4);
    const order = (await placeOrder(orderBody(shop, [{ sku: 'ORD-SHIP', quantity: 3 }]))).body;
    const res = await http(`/v3/orders/${order.id}/fulfill`, { key, body: { tracking_number: '1Z999', carrier: 'ups' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'fulfilled', fulfillment: { status: 'fulfilled', tracking_number: '1Z999', carrier: 'ups' } });
    expect(await stockOf(platform, key, 'ORD-SHIP')).toEqual({ quantity: 1, reserved: 0 });
    expect((await http(`/v3/orders/${order.id}/cancel`, { key, body: {} })).status).toBe(409);
    const handle = platform.temporal.client.workflow.getHandle(order.workflow_id);
    expect(await handle.result()).toMatchObject({ status: 'fulfilled' });
    // The order was written by a local activity inside the first workflow task; fulfilment, an update
    // that comes later, runs as an activity of its own.
    expect(activitySteps(await handle.fetchHistory())).toEqual([['createOrder', 'local'], ['fulfillOrder', 'activity']]);
  });

  it('records order.fulfillment.delayed once the (configurable) deadline passes, and can still be fulfilled', async () => {
    const fast = await openShop(http, key, { fulfillment_deadline_seconds: 2 });
    await stockedProduct(http, key, fast, 'ORD-SLOW', 1);
    const order = (await placeOrder(orderBody(fast, [{ sku: 'ORD-SLOW', quantity: 1 }]))).body;
    expect(Date.parse(order.fulfillment.deadline) - Date.parse(order.created_at)).toBe(2000);
    const delayed = await eventually(async () => {
      const rows = await platform.sql<{ data: any }>('select data from events where type = $1 and data->\'object\'->>\'id\' = $2', ['order.fulfillment.delayed', order.id]);
      return rows[0];
    }, 20_000, 'order.fulfillment.delayed');
    expect(delayed.data.object).toMatchObject({ id: order.id, status: 'processing', fulfillment: { status: 'delayed' } });
    expect((await http(`/v3/orders/${order.id}`, { key })).body.fulfillment.status).toBe('delayed');
    const res = await http(`/v3/orders/${order.id}/fulfill`, { key, body: {} });
    expect(res.body).toMatchObject({ status: 'fulfilled', fulfillment: { status: 'fulfilled' } });
    const count = await platform.sql('select 1 from events where type = $1 and data->\'object\'->>\'id\' = $2', ['order.fulfillment.delayed', order.id]);
    expect(count).toHaveLength(1);
  });

  it('writes an order once, however often it is written again (a retried request, the workflow\'s first step)', async () => {
    await stockedProduct(http, key, shop, 'ORD-RETRY', 2);
    const [store] = await platform.sql<{ account_id: string }>('select account_id from stores where id = $1', [shop.storeId]);
    const scope = { accountId: store!.account_id, livemode: false };
    // What the API does, again (a retry after a commit whose answer was lost), then the workflow's first step.
    const draft = await draftOrder(scopedEm(platform.orm, scope), scope, orderBody(shop, [{ sku: 'ORD-RETRY', quantity: 1 }]), null);
    const first = await writeOrder(scopedEm(platform.orm, scope), scope, draft);
    const again = await writeOrder(scopedEm(platform.orm, scope), scope, draft);
    expect(again).toEqual(first);
    expect(await writeOrder(scopedEm(platform.orm, scope), scope, draft, { confirm: true })).toEqual(first);
    expect(await platform.sql('select 1 from orders where id = $1 and workflow_confirmed_at is not null', [draft.orderId])).toHaveLength(1);
    expect(await stockOf(platform, key, 'ORD-RETRY')).toEqual({ quantity: 2, reserved: 1 });
    // The outbox's start of an order that is not there (its draft says it was written) writes nothing: a 404 refusal.
    const ghost = { ...draft, orderId: 'ord_ghost', written: true };
    await expect(writeOrder(scopedEm(platform.orm, scope), scope, ghost, { confirm: true })).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect(await platform.sql('select 1 from orders where id = $1', ['ord_ghost'])).toEqual([]);
    const events = await platform.sql('select 1 from events where type = $1 and data->\'object\'->>\'id\' = $2', ['order.created', draft.orderId]);
    expect(events).toHaveLength(1);
  });

  it('refuses a short order in the request with nothing written: no row, no reservation, no event', async () => {
    await stockedProduct(http, key, shop, 'ORD-NONE', 1);
    const short = await placeOrder(orderBody(shop, [{ sku: 'ORD-NONE', quantity: 2 }], { metadata: { ref: 'refused' } }));
    expect(short.status).toBe(409);
    expect(short.body).toMatchObject({ code: 'insufficient_stock', sku: 'ORD-NONE', requested: 2, available: 1 });
    expect(await stockOf(platform, key, 'ORD-NONE')).toEqual({ quantity: 1, reserved: 0 });
    expect(await platform.sql(`select 1 from orders where line_items @> '[{"sku":"ORD-NONE"}]'`)).toEqual([]);
    expect(await platform.sql(`select 1 from events where data->'object'->'line_items' @> '[{"sku":"ORD-NONE"}]'`)).toEqual([]);
  });

  it('starts the workflow itself when a cancel comes before the dispatcher got to the order', async () => {
    await stockedProduct(http, key, shop, 'ORD-EARLY', 2);
    const [store] = await platform.sql<{ account_id: string }>('select account_id from stores where id = $1', [shop.storeId]);
    const scope = { accountId: store!.account_id, livemode: false };
    const em = scopedEm(platform.orm, scope);
    const draft = await draftOrder(em, scope, orderBody(shop, [{ sku: 'ORD-EARLY', quantity: 2 }]), null);
    // The order as the API writes it, with its order.created taken out of the dispatcher's reach in
    // the same transaction: the dispatcher never starts this workflow.
    await em.transactional(async (tx) => {
      await writeOrder(tx, scope, draft);
      await tx.getConnection().execute(`update events set dispatched_at = now() where type = 'order.created' and data->'object'->>'id' = ?`, [draft.orderId]);
    });
    const workflow = platform.temporal.client.workflow.getHandle(`order-${draft.orderId}`);
    await expect(workflow.describe()).rejects.toThrow(/not found/i);
    const res = await http(`/v3/orders/${draft.orderId}/cancel`, { key, body: { reason: 'changed my mind' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: draft.orderId, status: 'canceled', cancellation_reason: 'changed my mind' });
    expect(await stockOf(platform, key, 'ORD-EARLY')).toEqual({ quantity: 2, reserved: 0 });
    expect(await workflow.result()).toMatchObject({ status: 'canceled' });
    expect(activitySteps(await workflow.fetchHistory())).toEqual([['createOrder', 'local'], ['cancelOrder', 'activity']]);
    expect(await platform.sql('select 1 from orders where id = $1 and workflow_confirmed_at is not null', [draft.orderId])).toHaveLength(1);
  });

  it('never loses a write when 20 updates to one order race (row lock + version)', async () => {
    await stockedProduct(http, key, shop, 'ORD-PATCH', 1);
    const order = (await placeOrder(orderBody(shop, [{ sku: 'ORD-PATCH', quantity: 1 }]))).body;
    await eventually(async () => (await platform.sql('select 1 from orders where id = $1 and workflow_confirmed_at is not null', [order.id])).length > 0, 20_000, 'confirmation');
    const [start] = await platform.sql<{ version: number }>('select version from orders where id = $1', [order.id]);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      http(`/v3/orders/${order.id}`, { key, method: 'PATCH', body: { metadata: { [`k${i}`]: String(i) } } })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const after = (await http(`/v3/orders/${order.id}`, { key })).body;
    expect(Object.keys(after.metadata).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
    const [row] = await platform.sql<{ version: number }>('select version from orders where id = $1', [order.id]);
    expect(row!.version).toBe(start!.version + 20);
    const updates = await platform.sql('select 1 from events where type = $1 and data->\'object\'->>\'id\' = $2', ['order.updated', order.id]);
    expect(updates).toHaveLength(20);
  });
});

describe('GET /v3/orders filters and pagination', () => {
  let filterShop: Shop;
  const ids: string[] = [];
  beforeAll(async () => {
    filterShop = await openShop(http, key);
    await stockedProduct(http, key, filterShop, 'FLT-1', 100);
    for (let i = 0; i < 5; i++) ids.push((await placeOrder(orderBody(filterShop, [{ sku: 'FLT-1', quantity: 1 }]))).body.id);
    await platform.sql(`update orders set created_at = '2025-01-10T12:00:00Z' where id = any($1)`, [ids.slice(0, 2)]);
    await http(`/v3/orders/${ids[4]}/cancel`, { key, body: {} });
    await http(`/v3/orders/${ids[3]}/fulfill`, { key, body: {} });
  });
  const list = async (query: string) => {
    const res = await http(`/v3/orders?store_id=${filterShop.storeId}&${query}`, { key });
    expect(res.status).toBe(200);
    return res.body;
  };

  it('filters by created date range', async () => {
    expect((await list('created_lte=2025-01-10')).data.map((o: { id: string }) => o.id).sort()).toEqual(ids.slice(0, 2).sort());
    expect((await list('created_gte=2025-01-11')).data).toHaveLength(3);
    expect((await list('created_gte=2025-01-10T12:00:00Z&created_lte=2025-01-10T12:00:00Z')).data).toHaveLength(2);
  });

  it('filters by status groups (open, fulfilled, closed) and exact statuses', async () => {
    const idsOf = (body: any) => body.data.map((o: { id: string }) => o.id).sort();
    expect(idsOf(await list('status_group=open'))).toEqual(ids.slice(0, 3).sort());
    expect(idsOf(await list('status_group=fulfilled'))).toEqual([ids[3]]);
    expect(idsOf(await list('status_group=closed'))).toEqual([ids[3], ids[4]].sort());
    expect(idsOf(await list('status=canceled'))).toEqual([ids[4]]);
    expect(idsOf(await list('status_group=open,fulfilled'))).toEqual(ids.slice(0, 4).sort());
    expect((await http('/v3/orders?status_group=pending', { key })).status).toBe(422);
  });

  it('filters by customer and pages with a stable cursor', async () => {
    expect((await list(`customer_id=${filterShop.customerId}`)).data).toHaveLength(5);
    expect((await list('customer_id=cus_other')).data).toHaveLength(0);
    const seen: string[] = [];
    let page = await list('limit=2');
    for (;;) {
      seen.push(...page.data.map((o: { id: string }) => o.id));
      if (!page.has_more) break;
      page = await list(`limit=2&cursor=${page.next_cursor}`);
    }
    expect(seen).toEqual([...ids].reverse());
  });
});
