/**
 * `scripts/node24.sh node bench/cpu-probe.ts ['{"ENV":"value"}']`: CPU time per request of each
 * process on the foundation path: GET /v3/customers/{id} through the pipeline and the same SELECT
 * through the raw baseline, each under 50 connections for 8 s, alternating twice; for each run the
 * CPU microseconds per request spent by the server, PostgreSQL (all its processes), the Temporal
 * server and this process (the load generator), read from /proc, and per request the server's read
 * and write system calls and PostgreSQL's commits (what shows whether a side makes more round
 * trips or transactions than the other). With `BENCH_PGSS=1` (PostgreSQL
 * started with `shared_preload_libraries = 'pg_stat_statements'`), each run also lists the
 * statements that took PostgreSQL's time, as calls and execution microseconds per request.
 */
import { readFileSync } from 'node:fs';
import { cpuMark, cpuPerOperation, statementsFromNow } from './cpu.ts';
import { foundationSides } from './foundation.ts';
import { autocannonRun, startBenchPlatform, startInfra } from './harness.ts';

/** The server's read and write system calls (`/proc/<pid>/io`: sockets included) per request since the mark. */
function syscallMark(pid: number) {
  const read = () => Object.fromEntries(readFileSync(`/proc/${pid}/io`, 'utf8').trim().split('\n').map((l) => l.split(': ')).map(([k, v]) => [k, Number(v)]));
  const before = read();
  return (requests: number) => {
    const after = read();
    const per = (field: string) => Math.round(((after[field]! - before[field]!) / requests) * 100) / 100;
    return { read_syscalls: per('syscr'), write_syscalls: per('syscw') };
  };
}

const env = JSON.parse(process.argv[2] ?? '{}') as Record<string, string>;
const infra = await startInfra();
const platform = await startBenchPlatform(infra, { env });
try {
  const sides = await foundationSides(platform);
  try {
    const runs = { baseline: sides.baseline, pipeline: sides.pipeline };
    for (const side of Object.values(runs)) await autocannonRun({ ...side, connections: 50, duration: 3 });
    for (let round = 0; round < 2; round++) {
      for (const [name, side] of Object.entries(runs)) {
        const statements = await statementsFromNow(platform.sql);
        const mark = cpuMark(side.pid);
        const calls = syscallMark(side.pid);
        const [commitsBefore] = await platform.sql<{ n: string }>('select sum(xact_commit) as n from pg_stat_database');
        const result = await autocannonRun({ ...side, connections: 50, duration: 8 });
        const [commitsAfter] = await platform.sql<{ n: string }>('select sum(xact_commit) as n from pg_stat_database');
        console.log(JSON.stringify({
          run: name, rps: result.requestsPerSec, p99: result.p99, requests: result.total, us_per_request: cpuPerOperation(mark, result.total),
          per_request: {
            ...calls(result.total),
            // PostgreSQL's commits (every statement outside a transaction is one), of the whole server.
            commits: Math.round(((Number(commitsAfter!.n) - Number(commitsBefore!.n)) / result.total) * 100) / 100,
          },
        }));
        await statements.print(result.total, 8);
      }
    }
  } finally {
    await sides.stop();
  }
} finally {
  await platform.close();
  await infra.stop();
}
