/**
 * `scripts/node24.sh node bench/payments-cpu-probe.ts`: where a payment's CPU goes, next to an empty
 * workflow's — the two sides of target 2. 10 clients make POST /v3/payments/process for 8 s, then 10
 * clients start and await an empty workflow for 8 s, twice; for each run the CPU milliseconds per
 * payment (or workflow) of the API + worker process, PostgreSQL (all its processes), the Temporal
 * server and this process (the load generator). With `BENCH_PGSS=1` (PostgreSQL started with
 * `shared_preload_libraries = 'pg_stat_statements'`) it then lists the statements of one more
 * payments run, as calls and execution microseconds per payment. The server's environment passes
 * through (e.g. `TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS=0`). `PROBE_REQUEST=subscriptions` measures POST
 * /v3/subscriptions instead of the payments, the other half of target 2.
 */
import { Client, Connection } from '@temporalio/client';
import { cpuMark, cpuPerOperation, inMilliseconds, statementsFromNow } from './cpu.ts';
import { autocannonRun, emptyWorkflows, paymentsLoad, startBenchPlatform, startInfra, subscriptionsLoad } from './harness.ts';

const CLIENTS = 10;
const SECONDS = 8;

/** `PROBE_REQUEST=subscriptions`: POST /v3/subscriptions (one customer, one plan, the test card) in place of the payments. */
const subscriptions = process.env.PROBE_REQUEST === 'subscriptions';
const measured = subscriptions ? 'subscriptions' : 'payments';

const infra = await startInfra();
const platform = await startBenchPlatform(infra);
const connection = await Connection.connect({ address: platform.temporalAddress });
try {
  const client = new Client({ connection });
  const paying = subscriptions ? await subscriptionsLoad(platform, CLIENTS) : await paymentsLoad(platform, CLIENTS);
  const payments = async () => (await autocannonRun({ ...paying, duration: SECONDS })).total;
  const empty = async () => (await emptyWorkflows(client, `${platform.taskQueuePrefix}payments`, CLIENTS, SECONDS)).count;
  const measure = async (name: string, run: () => Promise<number>) => {
    const mark = cpuMark(platform.pid);
    const count = await run();
    const us = cpuPerOperation(mark, count);
    const ms = inMilliseconds(us);
    console.log(JSON.stringify({ run: name, per_sec: Math.round(count / SECONDS), cpu_ms_each: ms }));
    return count;
  };

  await payments(); // warm-up
  await empty();
  for (let round = 0; round < 2; round++) {
    await measure(measured, payments);
    await measure('empty workflows', empty);
  }
  if (process.env.BENCH_PGSS) {
    const statements = await statementsFromNow(platform.sql);
    await statements.print(await measure(`${measured} (statements)`, payments), 40);
  }
} finally {
  await connection.close();
  await platform.close();
  await infra.stop();
}
