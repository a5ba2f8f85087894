/**
 * `scripts/node24.sh node bench/payments-cpu-probe.ts`: where a payment's CPU goes, next to an empty
 * workflow's — the two sides of target 2. 10 clients make POST /v3/payments/process for 8 s, then 10
 * clients start and await an empty workflow for 8 s, twice; for each run the CPU milliseconds per
 * payment (or workflow) of the API + worker process, PostgreSQL (all its processes), the Temporal
 * server and this process (the load generator). With `BENCH_PGSS=1` (PostgreSQL started with
 * `shared_preload_libraries = 'pg_stat_statements'`) it then lists the statements of one more
 * payments run, as calls and execution microseconds per payment. The server's environment passes
 * through (e.g. `TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS=0`).
 */
import { Client, Connection } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { cpuTicksByComm, cpuTicksOf, ticksSince, TICKS_PER_SECOND } from './cpu.ts';
import { autocannonRun, startBenchPlatform, startInfra } from './harness.ts';

const CLIENTS = 10;
const SECONDS = 8;

const infra = await startInfra();
const platform = await startBenchPlatform(infra);
const connection = await Connection.connect({ address: platform.temporalAddress });
try {
  const client = new Client({ connection });
  const headers = { authorization: `Bearer ${await platform.newKey()}`, 'content-type': 'application/json' };
  const card = { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' } };
  const payments = async () => (await autocannonRun({
    url: `${platform.url}/v3/payments/process`, method: 'POST', headers, connections: CLIENTS, duration: SECONDS,
    body: JSON.stringify({ amount: 1999, currency: 'USD', payment_method: card }),
  })).total;
  const emptyWorkflows = async () => {
    let done = 0;
    const until = Date.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until) {
        await client.workflow.execute('paymentsBaselineWorkflow', { taskQueue: `${platform.taskQueuePrefix}payments`, workflowId: `probe-${randomUUID()}` });
        done++;
      }
    }));
    return done;
  };
  const measure = async (name: string, run: () => Promise<number>) => {
    const before = { server: cpuTicksOf(platform.pid), postgres: cpuTicksByComm('postgres'), temporal: cpuTicksByComm('temporal'), self: process.cpuUsage() };
    const count = await run();
    const ms = (ticks: number) => Math.round((ticks * 1e4) / TICKS_PER_SECOND / count) / 10;
    const self = process.cpuUsage(before.self);
    console.log(JSON.stringify({
      run: name, per_sec: Math.round(count / SECONDS),
      cpu_ms_each: {
        server: ms(cpuTicksOf(platform.pid) - before.server),
        postgres: ms(ticksSince(before.postgres, cpuTicksByComm('postgres'))),
        temporal: ms(ticksSince(before.temporal, cpuTicksByComm('temporal'))),
        load_generator: Math.round((self.user + self.system) / count / 100) / 10,
      },
    }));
    return count;
  };

  await payments(); // warm-up
  await emptyWorkflows();
  for (let round = 0; round < 2; round++) {
    await measure('payments', payments);
    await measure('empty workflows', emptyWorkflows);
  }
  if (process.env.BENCH_PGSS) {
    await platform.sql('create extension if not exists pg_stat_statements; select pg_stat_statements_reset()', []);
    const count = await measure('payments (statements)', payments);
    const rows = await platform.sql<{ calls: string; ms: string; q: string }>(
      `select calls, total_exec_time as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as q
         from pg_stat_statements order by calls desc limit 40`, []);
    for (const r of rows) console.log(`  ${(Number(r.calls) / count).toFixed(2)} calls ${Math.round((Number(r.ms) * 1000) / count)} µs  ${r.q}`);
  }
} finally {
  await connection.close();
  await platform.close();
  await infra.stop();
}
