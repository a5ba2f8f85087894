import WebSocket from 'ws';
import { autocannonRun, percentile, type BenchPlatform, type LoadResult, type Scenario } from './harness.ts';

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
 * What the movements ledger and its realtime feed cost commerce's order throughput, and how far the
 * feed runs behind. The same server and database run POST /v3/orders on one hot SKU and on 200
 * spread SKUs with the ledger's trigger on `inventory_levels` enabled and disabled, alternating (on,
 * off, on, off) so a machine loaded by other work shows in both sides alike. With it on, every order
 * writes its ledger row and wakes the sequencer, which numbers the rows after their commits
 * (migration 0160); one WebSocket subscriber records each change's lag from the order's transaction
 * (`occurred_at`, PostgreSQL's clock on this machine) to its arrival.
 */
export const scenario: Scenario = {
  name: 'stock ledger: POST /v3/orders with the movements ledger and its realtime feed vs without, and the feed\'s lag',
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
    const setLedger = (on: boolean) => platform.sql(`alter table inventory_levels ${on ? 'enable' : 'disable'} trigger inventory_levels_movements`);

    // One subscriber of every change: the feed's lag, from the order's transaction to the socket.
    const lags: number[] = [];
    let recording = false;
    const feed = new WebSocket(`${platform.url.replace(/^http/, 'ws')}/v3/inventory/realtime`, { headers: { authorization: `Bearer ${key}` } });
    await new Promise<void>((resolve, reject) => {
      feed.on('message', (data) => {
        const msg = JSON.parse(data.toString()) as { type: string; occurred_at?: string };
        if (msg.type === 'subscribed') resolve();
        if (msg.type === 'stock_changed' && recording) lags.push(Date.now() - Date.parse(msg.occurred_at!));
      });
      feed.once('open', () => feed.send(JSON.stringify({ type: 'subscribe' })));
      feed.once('error', reject);
    });

    await autocannonRun({ ...base, body: body('HOT'), duration: 3 }); // warm-up
    const runs: Record<'on' | 'off', { hot: LoadResult[]; spread: LoadResult[] }> = { on: { hot: [], spread: [] }, off: { hot: [], spread: [] } };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of ['on', 'off'] as const) {
          await setLedger(mode === 'on');
          recording = mode === 'on';
          runs[mode].hot.push(await hotRun());
          runs[mode].spread.push(await spreadRun());
          await new Promise((r) => setTimeout(r, 500)); // the last changes reach the socket
          recording = false;
        }
      }
    } finally {
      await setLedger(true);
      feed.close();
    }
    const mean = (xs: number[]) => Math.round(xs.reduce((s, x) => s + x, 0) / xs.length);
    const [unnumbered] = await platform.sql<{ n: number }>('select count(*)::int as n from stock_movements where seq is null');
    lags.sort((a, b) => a - b);
    return {
      clients: CLIENTS,
      hot_orders_per_sec: mean(runs.on.hot.map((r) => r.requestsPerSec)),
      baseline_no_ledger_hot_orders_per_sec: mean(runs.off.hot.map((r) => r.requestsPerSec)),
      hot_p50_ms: mean(runs.on.hot.map((r) => r.p50)),
      hot_p99_ms: mean(runs.on.hot.map((r) => r.p99)),
      hot_p99_ms_no_ledger: mean(runs.off.hot.map((r) => r.p99)),
      spread_orders_per_sec: mean(runs.on.spread.map((r) => r.requestsPerSec)),
      spread_orders_per_sec_no_ledger: mean(runs.off.spread.map((r) => r.requestsPerSec)),
      spread_p99_ms: mean(runs.on.spread.map((r) => r.p99)),
      spread_p99_ms_no_ledger: mean(runs.off.spread.map((r) => r.p99)),
      feed_changes: lags.length,
      feed_lag_p50_ms: percentile(lags, 50),
      feed_lag_p99_ms: percentile(lags, 99),
      non2xx: [...runs.on.hot, ...runs.on.spread, ...runs.off.hot, ...runs.off.spread].reduce((s, r) => s + r.non2xx + r.errors, 0),
      movements_left_unnumbered: unnumbered?.n ?? 0,
    };
  },
};
