import { autocannonRun, post, type BenchDatabase, type Scenario } from './harness.ts';

const CLIENTS = 50;
const DURATION_S = 10;
const SPREAD_SKUS = 200;
const SCARCE_UNITS = 100;

/**
 * Stock is right when, for every SKU, the units reserved equal the units of the orders that hold
 * a reservation, nothing is negative and no order was accepted beyond the stock.
 */
export async function stockCheck(db: Pick<BenchDatabase, 'sql'>, skus: string[]) {
  // The orders' units summed in one pass over them: a pass per SKU outgrew the statement timeout (200 SKUs, thousands of orders).
  const rows = await db.sql<{ sku: string; quantity: number; reserved: number; ordered: number }>(
    `with ordered as (
       select li->>'sku' as sku, sum((li->>'quantity')::int) as units
         from orders o, jsonb_array_elements(o.line_items) li
        where o.status = 'processing' and li->>'sku' = any($1) group by 1
     )
     select l.sku, l.quantity, l.reserved, coalesce(o.units, 0)::int as ordered
       from inventory_levels l left join ordered o on o.sku = l.sku where l.sku = any($1)`, [skus]);
  const bad = rows.filter((r) => r.reserved !== r.ordered || r.reserved > r.quantity || r.quantity < 0 || r.reserved < 0);
  return { rows: rows.length, bad: bad.length, reserved: rows.reduce((s, r) => s + r.reserved, 0) };
}

/**
 * How long after their creation the orders' workflows started (the dispatcher starts them from
 * `order.created`; the workflow's first step stamps `workflow_confirmed_at`): waits up to
 * `timeoutMs` for every order created since `since` to be confirmed, then reports the lag's
 * percentiles and how long after the last order the last workflow started.
 */
export async function workflowLag(db: Pick<BenchDatabase, 'sql'>, since: Date, timeoutMs = 300_000) {
  const started = Date.now();
  for (;;) {
    const [left] = await db.sql<{ n: number }>('select count(*)::int as n from orders where created_at >= $1 and workflow_confirmed_at is null', [since]);
    if (left!.n === 0 || Date.now() - started > timeoutMs) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const [lag] = await db.sql<{ orders: number; unconfirmed: number; p50: number; p99: number; drain_s: number }>(
    `select count(*)::int as orders, count(*) filter (where workflow_confirmed_at is null)::int as unconfirmed,
            round(percentile_cont(0.5) within group (order by extract(epoch from workflow_confirmed_at - created_at) * 1000))::int as p50,
            round(percentile_cont(0.99) within group (order by extract(epoch from workflow_confirmed_at - created_at) * 1000))::int as p99,
            round(extract(epoch from max(workflow_confirmed_at) - max(created_at))::numeric, 1)::float as drain_s
       from orders where created_at >= $1`, [since]);
  return lag!;
}

/** A store, a warehouse and a customer, and one product per SKU with its stock; returns an order body for a SKU. */
export async function openBenchShop(url: string, key: string, stock: Record<string, number>): Promise<(sku: string) => string> {
  const store = await post(url, key, '/v3/stores', { name: 'Bench shop', default_currency: 'USD' });
  const warehouse = await post(url, key, '/v3/warehouses', { name: 'Bench warehouse' });
  const customer = await post(url, key, '/v3/customers', { email: 'bench@example.com', name: 'Bench' });
  for (const sku of Object.keys(stock)) await post(url, key, `/v3/stores/${store.id}/products`, { name: sku, sku, price: 1999 });
  const items = Object.entries(stock).map(([sku, quantity]) => ({ sku, warehouse_id: warehouse.id, quantity, operation: 'set' }));
  await post(url, key, '/v3/inventory/bulk-update', { items });
  return (sku) => JSON.stringify({
    store_id: store.id, customer_id: customer.id, currency: 'USD', line_items: [{ sku, quantity: 1 }],
    shipping_address: { name: 'Bench', line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
  });
}

/**
 * Orders per second end to end — HTTP → price, reserve stock (conditional UPDATE), write the order
 * and `order.created` in one transaction → 201, while the dispatcher starts each order's workflow
 * from its event — at 50 concurrent clients (issue #21: ≥ 200 orders/s on the hot SKU, p99 < 300 ms),
 * on one hot SKU (every order contends for the same stock row) and on 200 SKUs picked at random.
 * A third run gives another SKU only 100 units, and asks for more: exactly 100 orders may succeed. Stock is checked
 * against the orders after each run, and at the end how long the orders' workflows took to start
 * (`workflowLag`).
 */
export const scenario: Scenario = {
  name: 'commerce: POST /v3/orders, hot SKU vs spread SKUs',
  async run(platform) {
    const key = await platform.newKey();
    const skus = ['HOT', 'SCARCE', ...Array.from({ length: SPREAD_SKUS }, (_, i) => `SPREAD-${i}`)];
    const body = await openBenchShop(platform.url, key, Object.fromEntries(skus.map((sku) => [sku, sku === 'SCARCE' ? SCARCE_UNITS : 1_000_000])));
    const base = {
      url: `${platform.url}/v3/orders`, method: 'POST' as const, connections: CLIENTS,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    };
    await autocannonRun({ ...base, body: body('HOT'), duration: 3 }); // warm-up
    await workflowLag(platform, new Date(0));
    const since = new Date();
    const hot = await autocannonRun({ ...base, body: body('HOT'), duration: DURATION_S });
    const hotCheck = await stockCheck(platform, ['HOT']);

    const spread = await autocannonRun({
      ...base, duration: DURATION_S,
      requests: [{ method: 'POST', setupRequest: (req: any) => ({ ...req, body: body(`SPREAD-${Math.floor(Math.random() * SPREAD_SKUS)}`) }) }],
    });
    const spreadCheck = await stockCheck(platform, skus.filter((s) => s.startsWith('SPREAD-')));

    const scarce = await autocannonRun({ ...base, body: body('SCARCE'), amount: SCARCE_UNITS * 3 });
    const scarceCheck = await stockCheck(platform, ['SCARCE']);
    const [sold] = await platform.sql<{ n: number }>(`select count(*)::int as n from orders where line_items @> '[{"sku":"SCARCE"}]'`);
    const lag = await workflowLag(platform, since);

    return {
      clients: CLIENTS,
      hot_orders_per_sec: hot.requestsPerSec,
      hot_p50_ms: hot.p50,
      hot_p99_ms: hot.p99,
      hot_non2xx: hot.non2xx + hot.errors,
      hot_stock_consistent: hotCheck.bad === 0 && hotCheck.rows === 1,
      spread_orders_per_sec: spread.requestsPerSec,
      spread_p50_ms: spread.p50,
      spread_p99_ms: spread.p99,
      spread_non2xx: spread.non2xx + spread.errors,
      spread_stock_consistent: spreadCheck.bad === 0,
      scarce_stock: SCARCE_UNITS,
      scarce_attempts: scarce.total,
      scarce_orders_accepted: sold?.n ?? 0,
      scarce_rejected: scarce.non2xx,
      scarce_stock_consistent: scarceCheck.bad === 0 && scarceCheck.reserved === SCARCE_UNITS && sold?.n === SCARCE_UNITS,
      // Every order of the three runs: created → its workflow's first step.
      workflows_started: lag.orders - lag.unconfirmed,
      workflows_unstarted: lag.unconfirmed,
      workflow_start_lag_p50_ms: lag.p50,
      workflow_start_lag_p99_ms: lag.p99,
      workflow_drain_after_last_order_s: lag.drain_s,
    };
  },
};
