import { autocannonRun, type BenchPlatform, type LoadResult, type Scenario } from './harness.ts';

const CLIENTS = 20;
const DURATION_S = 8;
const ROUNDS = 2;
const SPREAD_SKUS = 200;

async function post(platform: BenchPlatform, key: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${platform.url}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`POST ${path} → ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * What the realtime feed's commit-time sequencing (the deferred trigger on `stock_movements`:
 * per-account counter, NOTIFY) costs commerce's order throughput. The same server and database run
 * POST /v3/orders on one hot SKU and on 200 spread SKUs with the sequencing trigger enabled and
 * disabled, alternating (on, off, on, off) so a machine loaded by other work shows in both sides
 * alike. The ledger rows are written either way; only the sequencing at commit is switched.
 */
export const scenario: Scenario = {
  name: 'warehouses: stock sequencing cost on POST /v3/orders (trigger on vs off)',
  async run(platform) {
    const key = await platform.newKey();
    const store = await post(platform, key, '/v3/stores', { name: 'Bench shop', default_currency: 'USD' });
    const warehouse = await post(platform, key, '/v3/warehouses', { name: 'Bench warehouse' });
    const customer = await post(platform, key, '/v3/customers', { email: 'bench@example.com', name: 'Bench' });
    const skus = ['HOT', ...Array.from({ length: SPREAD_SKUS }, (_, i) => `SPREAD-${i}`)];
    for (const sku of skus) await post(platform, key, `/v3/stores/${store.id}/products`, { name: sku, sku, price: 1999 });
    await post(platform, key, '/v3/inventory/bulk-update', { items: skus.map((sku) => ({ sku, warehouse_id: warehouse.id, quantity: 1_000_000, operation: 'set' })) });

    const body = (sku: string) => JSON.stringify({
      store_id: store.id, customer_id: customer.id, currency: 'USD', line_items: [{ sku, quantity: 1 }],
      shipping_address: { name: 'Bench', line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
    });
    const base = {
      url: `${platform.url}/v3/orders`, method: 'POST' as const, connections: CLIENTS, duration: DURATION_S,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    };
    const hotRun = () => autocannonRun({ ...base, body: body('HOT') });
    const spreadRun = () => autocannonRun({
      ...base, requests: [{ method: 'POST', setupRequest: (req: any) => ({ ...req, body: body(`SPREAD-${Math.floor(Math.random() * SPREAD_SKUS)}`) }) }],
    });
    const setSequencing = (on: boolean) => platform.sql(`alter table stock_movements ${on ? 'enable' : 'disable'} trigger stock_movements_sequence`);

    await autocannonRun({ ...base, body: body('HOT'), duration: 3 }); // warm-up
    const runs: Record<'on' | 'off', { hot: LoadResult[]; spread: LoadResult[] }> = { on: { hot: [], spread: [] }, off: { hot: [], spread: [] } };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of ['on', 'off'] as const) {
          await setSequencing(mode === 'on');
          runs[mode].hot.push(await hotRun());
          runs[mode].spread.push(await spreadRun());
        }
      }
    } finally {
      await setSequencing(true);
    }
    const mean = (xs: number[]) => Math.round(xs.reduce((s, x) => s + x, 0) / xs.length);
    const [unsequenced] = await platform.sql<{ n: number }>('select count(*)::int as n from stock_movements where seq is null');
    return {
      clients: CLIENTS,
      hot_orders_per_sec_sequenced: mean(runs.on.hot.map((r) => r.requestsPerSec)),
      hot_orders_per_sec_unsequenced: mean(runs.off.hot.map((r) => r.requestsPerSec)),
      hot_p99_ms_sequenced: mean(runs.on.hot.map((r) => r.p99)),
      hot_p99_ms_unsequenced: mean(runs.off.hot.map((r) => r.p99)),
      spread_orders_per_sec_sequenced: mean(runs.on.spread.map((r) => r.requestsPerSec)),
      spread_orders_per_sec_unsequenced: mean(runs.off.spread.map((r) => r.requestsPerSec)),
      spread_p99_ms_sequenced: mean(runs.on.spread.map((r) => r.p99)),
      spread_p99_ms_unsequenced: mean(runs.off.spread.map((r) => r.p99)),
      non2xx: [...runs.on.hot, ...runs.on.spread, ...runs.off.hot, ...runs.off.spread].reduce((s, r) => s + r.non2xx + r.errors, 0),
      movements_left_unsequenced_by_off_runs: unsequenced?.n ?? 0,
    };
  },
};
