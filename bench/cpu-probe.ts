/**
 * `scripts/node24.sh node bench/cpu-probe.ts ['{"ENV":"value"}']`: CPU time per request of each
 * process on the foundation path: GET /v3/customers/{id} through the pipeline and the same SELECT
 * through the raw baseline, each under 50 connections for 8 s, alternating twice; for each run the
 * CPU microseconds per request spent by the server, PostgreSQL (all its processes), the Temporal
 * server and this process (the load generator), read from /proc. With `BENCH_PGSS=1` (PostgreSQL
 * started with `shared_preload_libraries = 'pg_stat_statements'`), each run also lists the
 * statements that took PostgreSQL's time, as calls and execution microseconds per request.
 */
import { cpuTicksByComm, cpuTicksOf, ticksSince, TICKS_PER_SECOND } from './cpu.ts';
import { autocannonRun, spawnServer, startBenchPlatform, startInfra, stopServer } from './harness.ts';

const env = JSON.parse(process.argv[2] ?? '{}') as Record<string, string>;
const infra = await startInfra();
const platform = await startBenchPlatform(infra, { env });
try {
  const key = await platform.newKey();
  const created = await fetch(`${platform.url}/v3/customers`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.com', first_name: 'Bench', last_name: 'Mark' }),
  });
  const customer = (await created.json()) as { id: string };
  const [row] = await platform.sql<{ account_id: string }>('select account_id from customers where id = $1', [customer.id]);
  const { child, info } = await spawnServer('./baseline-server.ts', { DATABASE_URL: platform.dbUrl, BENCH_ACCOUNT_ID: row!.account_id });
  try {
    const runs = {
      baseline: { pid: child.pid!, opts: { url: `${info.url}/v3/customers/${customer.id}` } },
      pipeline: { pid: platform.pid, opts: { url: `${platform.url}/v3/customers/${customer.id}`, headers: { authorization: `Bearer ${key}` } } },
    };
    for (const r of Object.values(runs)) await autocannonRun({ ...r.opts, connections: 50, duration: 3 });
    for (let round = 0; round < 2; round++) {
      for (const [name, r] of Object.entries(runs)) {
        if (process.env.BENCH_PGSS) await platform.sql('create extension if not exists pg_stat_statements; select pg_stat_statements_reset()', []);
        const before = { server: cpuTicksOf(r.pid), self: process.cpuUsage(), postgres: cpuTicksByComm('postgres'), temporal: cpuTicksByComm('temporal') };
        const result = await autocannonRun({ ...r.opts, connections: 50, duration: 8 });
        const self = process.cpuUsage(before.self);
        const perReq = (ticks: number) => Math.round((ticks * 1e6) / TICKS_PER_SECOND / result.total);
        console.log(JSON.stringify({
          run: name, rps: result.requestsPerSec, p99: result.p99, requests: result.total,
          us_per_request: {
            server: perReq(cpuTicksOf(r.pid) - before.server),
            postgres: perReq(ticksSince(before.postgres, cpuTicksByComm('postgres'))),
            temporal: perReq(ticksSince(before.temporal, cpuTicksByComm('temporal'))),
            load_generator: Math.round((self.user + self.system) / result.total),
          },
        }));
        if (process.env.BENCH_PGSS) {
          const rows = await platform.sql<{ calls: string; ms: string; q: string }>(
            `select calls, round(total_exec_time::numeric, 0) as ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as q
               from pg_stat_statements order by total_exec_time desc limit 8`, []);
          for (const s of rows) console.log(`  ${(Number(s.calls) / result.total).toFixed(3)} calls/req ${Math.round((Number(s.ms) * 1000) / result.total)} us/req  ${s.q}`);
        }
      }
    }
  } finally {
    await stopServer(child);
  }
} finally {
  await platform.close();
  await infra.stop();
}
