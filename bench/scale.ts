import { Client, Connection } from '@temporalio/client';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { scheduleIds } from '../worker/schedules.ts';
import { openBenchShop, stockCheck } from './commerce.ts';
import {
  autocannonRun, BENCH_ENV, createBenchDatabase, median, peakRssMbOf, spawnProcess, stopServer,
  type BenchDatabase, type Infra, type LoadResult, type StandaloneScenario,
} from './harness.ts';

const CONNECTIONS = 50;
const ROUNDS = 3;
const READ_SECONDS = 5;
const ORDER_SECONDS = 8;
const SPREAD_SKUS = 50;
/** The standard tier's minute limit in these processes (premium, used for the load, stays lifted). */
const MINUTE_LIMIT = 60;
const IDEMPOTENCY_KEYS = 20;
const SCARCE_UNITS = 100;

/**
 * One deployment: `replicas` API processes (api/main.ts) and as many worker processes
 * (worker/main.ts), the production entry points, on a database and task queues of their own.
 */
interface Deployment {
  replicas: number;
  db: BenchDatabase;
  apiUrls: string[];
  apis: ChildProcess[];
  workers: ChildProcess[];
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startDeployment(infra: Infra, replicas: number): Promise<Deployment> {
  const db = await createBenchDatabase(infra);
  const env = {
    // LOG_LEVEL error: the orders refused for stock are activity failures the SDK logs as warnings.
    ...BENCH_ENV, LOG_LEVEL: 'error', RATE_LIMIT_PER_MINUTE: String(MINUTE_LIMIT), HOST: '127.0.0.1', DATABASE_POOL_MAX: '8',
    DATABASE_URL: db.dbUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE_PREFIX: db.taskQueuePrefix, WORKFLOW_BUNDLE_PATH: infra.workflowBundlePath,
  };
  const apis: ChildProcess[] = [];
  const workers: ChildProcess[] = [];
  const apiUrls: string[] = [];
  try {
    // A worker serves GET /metrics (METRICS_PORT) once its workers poll and the schedules exist.
    for (let i = 0; i < replicas; i++) {
      const port = await freePort();
      workers.push(await spawnProcess('../worker/main.ts', { ...env, METRICS_PORT: String(port) }, `http://127.0.0.1:${port}/metrics`));
    }
    for (let i = 0; i < replicas; i++) {
      const port = await freePort();
      apis.push(await spawnProcess('../api/main.ts', { ...env, PORT: String(port) }, `http://127.0.0.1:${port}/healthz`));
      apiUrls.push(`http://127.0.0.1:${port}`);
    }
  } catch (err) {
    for (const child of [...apis, ...workers]) await stopServer(child);
    await db.drop();
    throw err;
  }
  return {
    replicas, db, apiUrls, apis, workers,
    async close() {
      for (const child of [...apis, ...workers]) await stopServer(child);
      // The schedules the workers created would otherwise outlive this run on the shared server.
      const connection = await Connection.connect({ address: infra.temporalAddress });
      try {
        const client = new Client({ connection });
        for (const id of scheduleIds(db.taskQueuePrefix)) await client.schedule.getHandle(id).delete().catch(() => undefined);
      } finally {
        await connection.close();
      }
      await db.drop();
    },
  };
}

/** The same load split evenly over the deployment's APIs: rates add up, latencies are the worst API's. */
async function splitLoad(urls: string[], opts: Parameters<typeof autocannonRun>[0] & { url: string }): Promise<LoadResult> {
  const connections = opts.connections ?? CONNECTIONS;
  const results = await Promise.all(urls.map((url) => autocannonRun({
    ...opts, url: `${url}${opts.url}`, connections: connections / urls.length,
    ...(opts.amount ? { amount: Math.ceil(opts.amount / urls.length) } : {}),
  })));
  return {
    requestsPerSec: results.reduce((n, r) => n + r.requestsPerSec, 0),
    p50: Math.max(...results.map((r) => r.p50)),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((n, r) => n + r.errors, 0),
    non2xx: results.reduce((n, r) => n + r.non2xx, 0),
    total: results.reduce((n, r) => n + r.total, 0),
  };
}

interface Load {
  reads(): Promise<LoadResult>;
  orders(): Promise<LoadResult>;
}

/** A customer to read and a shop with SPREAD_SKUS products to order from, on a premium key (limits lifted). */
async function prepareLoad(d: Deployment): Promise<Load> {
  const key = await d.db.newKey();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const customer = await (await fetch(`${d.apiUrls[0]}/v3/customers`, { method: 'POST', headers, body: JSON.stringify({ email: 'scale@example.com', name: 'Scale' }) })).json() as { id: string };
  const skus = Array.from({ length: SPREAD_SKUS }, (_, i) => `SPREAD-${i}`);
  const body = await openBenchShop(d.apiUrls[0]!, key, Object.fromEntries(skus.map((sku) => [sku, 1_000_000])));
  return {
    reads: () => splitLoad(d.apiUrls, { url: `/v3/customers/${customer.id}`, headers, duration: READ_SECONDS }),
    orders: () => splitLoad(d.apiUrls, {
      url: '/v3/orders', method: 'POST', headers, duration: ORDER_SECONDS,
      requests: [{ method: 'POST', setupRequest: (req: any) => ({ ...req, body: body(skus[Math.floor(Math.random() * SPREAD_SKUS)]!) }) }],
    }),
  };
}

async function send(url: string, key: string, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${url}${path}`, {
    method: init.method ?? (init.body ? 'POST' : 'GET'),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/**
 * Rate limits across replicas: a standard key (MINUTE_LIMIT a minute) sends twice its limit,
 * alternating between the APIs, in batches under the concurrency limit: exactly MINUTE_LIMIT pass.
 */
async function rateLimitCheck(d: Deployment) {
  const key = await d.db.newKey({ accountId: await d.db.newAccount('standard') });
  // The windows are whole clock minutes: start early in one so the burst does not straddle two.
  const [{ ms }] = await d.db.sql<{ ms: string }>('select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms') as [{ ms: string }];
  const intoMinute = Number(ms) % 60_000;
  if (intoMinute > 40_000) await sleep(60_000 - intoMinute + 200);
  const statuses: number[] = [];
  for (let sent = 0; sent < 2 * MINUTE_LIMIT; sent += 8) {
    statuses.push(...await Promise.all(Array.from({ length: 8 }, (_, i) => send(d.apiUrls[i % d.apiUrls.length]!, key, '/v3/customers?limit=1').then((r) => r.status))));
  }
  const admitted = statuses.filter((s) => s === 200).length;
  const refused = statuses.filter((s) => s === 429).length;
  return { limit: MINUTE_LIMIT, sent: statuses.length, admitted, refused, consistent: admitted === MINUTE_LIMIT && refused === statuses.length - MINUTE_LIMIT };
}

/**
 * Idempotency across replicas: each Idempotency-Key is sent to every API at the same moment, for a
 * customer (API and PostgreSQL only) and for an order (through Temporal), and a key that got no 2xx
 * (503: Temporal past its deadline) is retried as a client would, with the same key: one resource per
 * key, every 2xx answer the same resource, the others 409 idempotency_key_in_use or 503.
 */
async function idempotencyCheck(d: Deployment) {
  const key = await d.db.newKey();
  const body = await openBenchShop(d.apiUrls[0]!, key, { IDEM: 1_000_000 });
  const run = Date.now().toString(36);
  let duplicates = 0;
  let unexpected = 0;
  let retries = 0;
  const allowed = (a: Awaited<ReturnType<typeof send>>) => a.status < 300 || a.status === 503 || (a.status === 409 && a.json().code === 'idempotency_key_in_use');
  for (let i = 0; i < IDEMPOTENCY_KEYS; i++) {
    for (const [path, payload] of [['/v3/customers', { email: `idem-${run}-${i}@example.com`, name: 'Idem' }], ['/v3/orders', { ...JSON.parse(body('IDEM')), metadata: { idem: `${run}-${i}` } }]] as const) {
      const attempt = (url: string) => send(url, key, path, { body: payload, headers: { 'idempotency-key': `${run}-${path}-${i}` } });
      const answers = await Promise.all(d.apiUrls.map(attempt));
      for (let n = 0; n < 10 && !answers.some((a) => a.status < 300); n++, retries++) {
        await sleep(500 * (n + 1));
        answers.push(await attempt(d.apiUrls[n % d.apiUrls.length]!));
      }
      const created = answers.filter((a) => a.status < 300);
      if (new Set(created.map((a) => a.json().id)).size > 1) duplicates++;
      if (created.length === 0 || !answers.every(allowed)) unexpected++;
    }
  }
  const [rows] = await d.db.sql<{ customers: number; orders: number; reserved: number }>(
    `select (select count(*)::int from customers where email like $1) as customers,
            (select count(*)::int from orders where metadata->>'idem' like $2) as orders,
            (select reserved from inventory_levels where sku = 'IDEM') as reserved`, [`idem-${run}-%`, `${run}-%`]) as [{ customers: number; orders: number; reserved: number }];
  return {
    keys: IDEMPOTENCY_KEYS, customers: rows.customers, orders: rows.orders, reserved: rows.reserved, duplicate_answers: duplicates, unexpected_answers: unexpected, retries,
    consistent: rows.customers === IDEMPOTENCY_KEYS && rows.orders === IDEMPOTENCY_KEYS && rows.reserved === IDEMPOTENCY_KEYS && duplicates === 0 && unexpected === 0,
  };
}

/**
 * Stock across replicas: three times the stock of one SKU ordered through every API at once; once
 * the orders have settled (an answer lost to the API's Temporal deadline may still be placed by its
 * workflow), never more sold than the stock and every reserved unit an order's.
 */
async function stockHolds(d: Deployment) {
  const key = await d.db.newKey();
  const body = await openBenchShop(d.apiUrls[0]!, key, { SCARCE: SCARCE_UNITS });
  const load = await splitLoad(d.apiUrls, {
    url: '/v3/orders', method: 'POST', body: body('SCARCE'), amount: SCARCE_UNITS * 3,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  });
  let sold = -1;
  for (let stable = 0, waited = 0; stable < 3 && waited < 30; waited++) {
    await sleep(1000);
    const [row] = await d.db.sql<{ n: number }>(`select count(*)::int as n from orders where line_items @> '[{"sku":"SCARCE"}]'`);
    stable = row!.n === sold ? stable + 1 : 0;
    sold = row!.n;
  }
  const check = await stockCheck(d.db, ['SCARCE']);
  return {
    stock: SCARCE_UNITS, attempts: load.total, answered_201: load.total - load.non2xx - load.errors, sold, reserved: check.reserved,
    consistent: check.bad === 0 && check.rows === 1 && sold <= SCARCE_UNITS && check.reserved === sold,
  };
}

/**
 * Issue #21 target 6: the same load — GET /v3/customers/{id} (the API and PostgreSQL) and POST
 * /v3/orders on 50 SKUs (the API, Temporal and the workers) at 50 connections split evenly over the
 * APIs — on two API and two worker processes and on one of each, both deployments up at once on one
 * PostgreSQL and one Temporal, in alternating rounds (medians reported). Then, on the two-replica
 * deployment, rate limits, idempotency and stock checked across the replicas (`consistent`).
 */
export const scenario: StandaloneScenario = {
  name: 'scale: 2 API + 2 worker processes vs 1 + 1',
  async standalone(infra) {
    const one = await startDeployment(infra, 1);
    let two: Deployment | undefined;
    try {
      two = await startDeployment(infra, 2);
      const loads = new Map([[one, await prepareLoad(one)], [two, await prepareLoad(two)]]);
      for (const load of loads.values()) await load.orders(); // warm-up (workflow threads, caches, pools)
      const rounds: Record<'reads' | 'orders', Map<Deployment, LoadResult[]>> = { reads: new Map([[one, []], [two, []]]), orders: new Map([[one, []], [two, []]]) };
      for (let round = 0; round < ROUNDS; round++) {
        for (const [d, load] of round % 2 ? [...loads].reverse() : loads) {
          rounds.reads.get(d)!.push(await load.reads());
          rounds.orders.get(d)!.push(await load.orders());
        }
      }
      const stat = (kind: 'reads' | 'orders', d: Deployment, pick: (r: LoadResult) => number) => median(rounds[kind].get(d)!.map(pick));
      const factor = (kind: 'reads' | 'orders') => Math.round(median(rounds[kind].get(two!)!.map((r, i) => r.requestsPerSec / rounds[kind].get(one)![i]!.requestsPerSec)) * 100) / 100;
      const rateLimits = await rateLimitCheck(two);
      const idempotency = await idempotencyCheck(two);
      const stock = await stockHolds(two);
      const rss = (children: ChildProcess[]) => children.map((c) => peakRssMbOf(c.pid));
      const result = {
        connections: CONNECTIONS, rounds: ROUNDS,
        reads_1x_rps: stat('reads', one, (r) => r.requestsPerSec), reads_2x_rps: stat('reads', two, (r) => r.requestsPerSec), reads_factor: factor('reads'),
        reads_1x_p99_ms: stat('reads', one, (r) => r.p99), reads_2x_p99_ms: stat('reads', two, (r) => r.p99),
        orders_1x_per_sec: stat('orders', one, (r) => r.requestsPerSec), orders_2x_per_sec: stat('orders', two, (r) => r.requestsPerSec), orders_factor: factor('orders'),
        ratio: factor('orders'), // the summary's ratio: the orders' factor (median of the rounds' ratios)
        orders_1x_p50_ms: stat('orders', one, (r) => r.p50), orders_2x_p50_ms: stat('orders', two, (r) => r.p50),
        orders_1x_p99_ms: stat('orders', one, (r) => r.p99), orders_2x_p99_ms: stat('orders', two, (r) => r.p99),
        orders_1x_non2xx: rounds.orders.get(one)!.reduce((n, r) => n + r.non2xx + r.errors, 0),
        orders_2x_non2xx: rounds.orders.get(two)!.reduce((n, r) => n + r.non2xx + r.errors, 0),
        rate_limit: `${rateLimits.admitted} of ${rateLimits.sent} admitted (limit ${rateLimits.limit})`,
        rate_limit_consistent: rateLimits.consistent,
        idempotency: `${idempotency.keys} keys: ${idempotency.customers} customers, ${idempotency.orders} orders, ${idempotency.reserved} units reserved; ${idempotency.duplicate_answers} duplicate, ${idempotency.unexpected_answers} unexpected answers, ${idempotency.retries} retries after a 503`,
        idempotency_consistent: idempotency.consistent,
        stock: `${stock.sold} sold of ${stock.stock} (${stock.attempts} attempts, ${stock.answered_201} answered 201), ${stock.reserved} reserved`,
        stock_consistent: stock.consistent,
        consistent: rateLimits.consistent && idempotency.consistent && stock.consistent,
        rss_1x_api_worker_mb: [...rss(one.apis), ...rss(one.workers)].join(' '),
        rss_2x_apis_workers_mb: [...rss(two.apis), ...rss(two.workers)].join(' '),
      };
      const peaks = rss([...one.apis, ...one.workers, ...two.apis, ...two.workers]).filter((n): n is number => n !== null);
      return { result, rssMb: peaks.length ? Math.max(...peaks) : null };
    } finally {
      await two?.close();
      await one.close();
    }
  },
};
