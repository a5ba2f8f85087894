import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { refreshRollup } from '../domain/analytics/queries.ts';
import { autocannonRun, percentile, type BenchPlatform, type Scenario } from './harness.ts';

const CLIENTS = 4;
const DURATION_S = 10;
const CUSTOMERS = 1000;
const REPORT_ROWS = 100_000;

/**
 * A year of data for 1,000 customers: a subscription each (monthly, quarterly or yearly plan, 15 %
 * canceled), a paid invoice per month collected by a payment, 40,000 one-time payments, 2,000
 * refunds and 30,000 orders, spread over the last 365 days.
 */
export async function seedYear(platform: BenchPlatform, accountId: string): Promise<void> {
  const q = (sql: string) => platform.sql(sql, [accountId]);
  await q(`insert into customers (id, account_id, livemode, email, created_at, updated_at)
           select 'cus_b' || lpad(g::text, 6, '0'), $1, false, 'c' || g || '@example.com', now() - interval '400 days', now()
             from generate_series(1, ${CUSTOMERS}) g`);
  await q(`insert into billing_plans (id, account_id, livemode, name, currency, amount, interval, dunning, created_at) values
           ('plan_bm', $1, false, 'M', 'USD', 2900, 'monthly', '{}', now()), ('plan_bq', $1, false, 'Q', 'USD', 7900, 'quarterly', '{}', now()),
           ('plan_by', $1, false, 'Y', 'EUR', 29000, 'yearly', '{}', now())`);
  await q(`insert into subscriptions (id, account_id, livemode, customer_id, plan_id, billing_cycle, status, auto_collection, days_until_due,
                                      current_period_start, current_period_end, canceled_at, workflow_id, version, created_at, updated_at)
           select 'sub_b' || lpad(g::text, 6, '0'), $1, false, 'cus_b' || lpad(g::text, 6, '0'), (array['plan_bm', 'plan_bq', 'plan_by'])[1 + g % 3], 'monthly',
                  case when g % 7 = 0 then 'canceled' else 'active' end, true, 30, now(), now() + interval '1 month',
                  case when g % 7 = 0 then now() - (g % 200) * interval '1 day' end, 'subscription-sub_b' || g, 1,
                  now() - interval '365 days' + (g % 300) * interval '1 day', now()
             from generate_series(1, ${CUSTOMERS}) g`);
  await q(`insert into payments (id, account_id, livemode, kind, status, amount, currency, customer_id, gateway, card_brand, card_last4, card_exp_month,
                                 card_exp_year, card_token, workflow_id, created_at, updated_at)
           select 'pay_bi' || s.id || '_' || m, $1, false, 'charge', 'succeeded', 2900, 'USD', s.customer_id, 'sandbox', 'visa', '4242', 12, 2030, 'tok',
                  'payment-x', s.created_at + m * interval '1 month', now()
             from subscriptions s, generate_series(0, 11) m where s.account_id = $1 and s.created_at + m * interval '1 month' < now()`);
  await q(`insert into invoices (id, account_id, livemode, customer_id, subscription_id, status, currency, subtotal, tax, amount, amount_paid, period_start,
                                 period_end, due_date, line_items, taxes, auto_collection, last_payment_id, paid_at, created_at, updated_at)
           select 'inv_b' || substr(p.id, 7), $1, false, p.customer_id, split_part(substr(p.id, 7), '_', 1) || '_' || split_part(substr(p.id, 7), '_', 2), 'paid', 'USD',
                  2900, 0, 2900, 2900, p.created_at, p.created_at + interval '1 month', p.created_at::date, '[]', '[]', true, p.id, p.created_at, p.created_at, now()
             from payments p where p.account_id = $1 and p.id like 'pay_bi%'`);
  await q(`insert into invoice_collection_attempts (invoice_id, attempt, payment_id, status, created_at)
           select i.id, 1, i.last_payment_id, 'succeeded', i.paid_at from invoices i where i.account_id = $1`);
  await q(`insert into payments (id, account_id, livemode, kind, status, amount, currency, customer_id, gateway, card_brand, card_last4, card_exp_month,
                                 card_exp_year, card_token, workflow_id, created_at, updated_at)
           select 'pay_bo' || g, $1, false, 'charge', 'succeeded', 500 + (g * 7919) % 20000, (array['USD', 'USD', 'USD', 'EUR'])[1 + g % 4],
                  'cus_b' || lpad((1 + g % ${CUSTOMERS})::text, 6, '0'), 'sandbox', 'visa', '4242', 12, 2030, 'tok', 'payment-x',
                  now() - ((g::bigint * 104729) % 31536000) * interval '1 second', now()
             from generate_series(1, 40000) g`);
  await q(`insert into payment_refunds (id, account_id, livemode, payment_id, amount, currency, status, created_at, updated_at)
           select 're_b' || g, $1, false, 'pay_bo' || (g * 13), 100, (array['USD', 'USD', 'USD', 'EUR'])[1 + (g * 13) % 4], 'succeeded',
                  (select created_at from payments where id = 'pay_bo' || (g * 13)) + interval '1 day', now()
             from generate_series(1, 2000) g`);
  await q(`insert into exchange_rates (account_id, livemode, base_currency, quote_currency, rate, updated_at) values ($1, false, 'EUR', 'USD', 1.08, now())`);
  await seedOrders(platform, accountId, 30_000, 365);
  await platform.sql('analyze');
}

async function seedOrders(platform: BenchPlatform, accountId: string, n: number, days: number): Promise<void> {
  const store = `store_b${accountId.slice(-6)}`;
  await platform.sql(`insert into stores (id, account_id, livemode, name, default_currency, fulfillment_deadline_seconds, created_at)
                      values ($2, $1, false, 'Bench', 'USD', 86400, now()) on conflict do nothing`, [accountId, store]);
  await platform.sql(`insert into customers (id, account_id, livemode, created_at, updated_at) values ($2, $1, false, now(), now()) on conflict do nothing`,
    [accountId, `cus_o${accountId.slice(-6)}`]);
  // In batches: the harness's connection has a statement timeout.
  for (let from = 1; from <= n; from += 10_000) {
    await platform.sql(
      `insert into orders (id, account_id, livemode, store_id, customer_id, status, total_amount, currency, line_items, shipping_address,
                           fulfillment_deadline, workflow_id, created_at, updated_at)
       select 'ord_b' || $4 || '_' || g, $1, false, $2, $3, case when g % 20 = 0 then 'canceled' else 'fulfilled' end, 1000 + g % 9000, 'USD',
              jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (g % 500), 'quantity', 1 + g % 3)), '{}', now(), 'order-b' || $4 || g,
              now() - ((g::bigint * 7919) % ($5::bigint * 86400)) * interval '1 second', now()
         from generate_series($6::int, $7::int) g`,
      [accountId, store, `cus_o${accountId.slice(-6)}`, accountId.slice(-6), days, from, Math.min(n, from + 9_999)],
    );
  }
}

/** The plain-SQL baseline: the revenue aggregate straight over the source tables (no views, no rollup, no pipeline). */
async function baseline(dbUrl: string, accountId: string, clients: number, seconds: number) {
  const pool = new pg.Pool({ connectionString: dbUrl, max: clients });
  const sql = `select date_trunc('month', at at time zone 'UTC') as m, currency, sum(amount)
                 from (select paid_at as at, currency, amount_paid as amount from invoices where account_id = $1 and livemode = false and status = 'paid'
                       union all select created_at, currency, amount from payments p where account_id = $1 and livemode = false and status = 'succeeded'
                         and not exists (select 1 from invoice_collection_attempts a where a.payment_id = p.id)
                       union all select created_at, currency, -amount from payment_refunds where account_id = $1 and livemode = false and status = 'succeeded') e
                where at >= now() - interval '365 days' group by 1, 2`;
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < end) {
      const t = performance.now();
      await pool.query(sql, [accountId]);
      latencies.push(performance.now() - t);
    }
  }));
  await pool.end();
  latencies.sort((a, b) => a - b);
  return { perSec: Math.round(latencies.length / seconds), p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) };
}

function renderInChild(env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [new URL('./analytics-render.ts', import.meta.url).pathname], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`render exited ${code}: ${out}`))));
  });
}

/**
 * GET /v3/analytics/revenue (12 months by month) and /kpis (30 days) p99 with a year of data for
 * 1,000 customers, answered from the live views and then from the refreshed rollup, next to the
 * plain-SQL aggregate over the source tables measured in the same run; and the peak memory of
 * rendering a 100,000-row report in each format.
 */
export const scenario: Scenario = {
  name: 'analytics: revenue and KPIs p99 vs plain SQL; 100k-row report memory',
  async run(platform) {
    const accountId = await platform.newAccount();
    const key = await platform.newKey({ accountId });
    await seedYear(platform, accountId);
    const get = (path: string) => ({ url: `${platform.url}${path}`, connections: CLIENTS, headers: { authorization: `Bearer ${key}` } });
    const revenuePath = '/v3/analytics/revenue?period=12m&granularity=month&currency=USD';
    const kpisPath = '/v3/analytics/kpis?period=30d&currency=USD';
    await autocannonRun({ ...get(revenuePath), duration: 3 }); // warm-up (and the forecast cache)
    const revenueLive = await autocannonRun({ ...get(revenuePath), duration: DURATION_S });
    const t = performance.now();
    const refreshed = await refreshRollup(platform.orm.em.fork(), { accountId, livemode: false });
    const refreshMs = Math.round(performance.now() - t);
    const revenueRollup = await autocannonRun({ ...get(revenuePath), duration: DURATION_S });
    const kpis = await autocannonRun({ ...get(kpisPath), duration: DURATION_S });
    const plain = await baseline(platform.dbUrl, accountId, CLIENTS, DURATION_S);

    // ANALYTICS_BENCH_FORMATS=none (or a list such as csv,pdf) limits the renders (they take minutes).
    const formats = (process.env.ANALYTICS_BENCH_FORMATS ?? 'csv,json,excel,pdf').split(',').filter((f) => f && f !== 'none');
    const reportAccount = await platform.newAccount();
    if (formats.length) await seedOrders(platform, reportAccount, REPORT_ROWS, 30);
    const dir = mkdtempSync(join(tmpdir(), 'bp-bench-reports-'));
    const renders: Record<string, unknown>[] = [];
    try {
      const today = new Date().toISOString().slice(0, 10);
      const start = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10);
      for (const format of formats) {
        renders.push(await renderInChild({
          DATABASE_URL: platform.dbUrl, ACCOUNT_ID: reportAccount, FORMAT: format, REPORT_TYPE: 'sales', START: start, END: today, OUT: join(dir, `r.${format}`),
        }));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const [counts] = await platform.sql<{ invoices: string; payments: string; orders: string }>(
      `select (select count(*) from invoices where account_id = $1) as invoices, (select count(*) from payments where account_id = $1) as payments,
              (select count(*) from orders where account_id = $1) as orders`, [accountId]);
    return {
      clients: CLIENTS,
      seeded: `${CUSTOMERS} customers, ${counts?.invoices} invoices, ${counts?.payments} payments, ${counts?.orders} orders`,
      revenue_live_p50_ms: revenueLive.p50, revenue_live_p99_ms: revenueLive.p99, revenue_live_per_sec: revenueLive.requestsPerSec,
      rollup_refresh_ms: refreshMs, rollup_buckets: refreshed.buckets,
      revenue_rollup_p50_ms: revenueRollup.p50, revenue_rollup_p99_ms: revenueRollup.p99, revenue_rollup_per_sec: revenueRollup.requestsPerSec,
      kpis_p50_ms: kpis.p50, kpis_p99_ms: kpis.p99, kpis_per_sec: kpis.requestsPerSec,
      non2xx: revenueLive.non2xx + revenueRollup.non2xx + kpis.non2xx + revenueLive.errors + revenueRollup.errors + kpis.errors,
      plain_sql_p50_ms: plain.p50, plain_sql_p99_ms: plain.p99, plain_sql_per_sec: plain.perSec,
      ...Object.fromEntries(renders.map((r) => [`render_${String(r.format)}`, `${String(r.rows)} rows, ${String(r.ms)} ms, ${String(r.bytes)} bytes, RSS ${String(r.baseline_rss_mb)} MB before, ${String(r.max_rss_mb)} MB peak`])),
    };
  },
};
