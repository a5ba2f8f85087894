/**
 * `scripts/node24.sh node bench/orders-cpu-probe.ts`: what an order costs in CPU, all of it — the
 * request and, after the answer, its workflow (started by the dispatcher from `order.created`) —
 * target 4's sides. 20 clients make POST /v3/orders on 200 SKUs for 8 s, then the probe waits until
 * every order's workflow has started; three rounds. For each round: orders per second, and the CPU
 * milliseconds per order of the API + worker process, PostgreSQL (all its processes), the Temporal
 * server and this process (the load generator), over the requests and the drain together. With
 * `BENCH_PGSS=1` (PostgreSQL started with `shared_preload_libraries = 'pg_stat_statements'`) one
 * more round lists the statements per order. The numbers are low-noise where throughput is not
 * (they do not depend on what else the machine runs), so a change to the order path is judged by
 * them first.
 */
import { workflowLag, openBenchShop } from './commerce.ts';
import { cpuMark, cpuPerOperation, inMilliseconds, settled, statementsFromNow } from './cpu.ts';
import { autocannonRun, startBenchPlatform, startInfra } from './harness.ts';

const CLIENTS = 20;
const SECONDS = 8;
const SKUS = 200;

const infra = await startInfra();
const platform = await startBenchPlatform(infra);
try {
  const key = await platform.newKey();
  const skus = Array.from({ length: SKUS }, (_, i) => `PROBE-${i}`);
  const body = await openBenchShop(platform.url, key, Object.fromEntries(skus.map((sku) => [sku, 1_000_000])));
  const orders = async () => {
    const since = new Date();
    const run = await autocannonRun({
      url: `${platform.url}/v3/orders`, method: 'POST', connections: CLIENTS, duration: SECONDS,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      requests: [{ method: 'POST', setupRequest: (req: any) => ({ ...req, body: body(skus[Math.floor(Math.random() * SKUS)]!) }) }],
    });
    const lag = await workflowLag(platform, since);
    return { count: run.total - run.non2xx - run.errors, run, lag };
  };
  const measure = async (name: string) => {
    await settled(platform.pid);
    const mark = cpuMark(platform.pid);
    const { count, run, lag } = await orders();
    const us = cpuPerOperation(mark, count);
    const ms = inMilliseconds(us);
    console.log(JSON.stringify({
      run: name, orders_per_sec: Math.round(count / SECONDS), p50_ms: run.p50, p99_ms: run.p99, non2xx: run.non2xx + run.errors,
      workflow_lag_p50_ms: lag.p50, unstarted: lag.unconfirmed, cpu_ms_per_order: ms,
    }));
    return count;
  };

  await orders(); // warm-up
  for (let round = 1; round <= 3; round++) await measure(`round ${round}`);
  if (process.env.BENCH_PGSS) {
    const statements = await statementsFromNow(platform.sql);
    await statements.print(await measure('statements'), 40);
  }
} finally {
  await platform.close();
  await infra.stop();
}
