/**
 * `scripts/node24.sh node bench/ab-probe.ts <other-checkout> [rounds]`: this checkout's platform
 * against another checkout's (a `git worktree` of main, say), both up at once, each on its own
 * database migrated by its own code, loaded in alternating 5 s rounds (each after 2 s unmeasured), so
 * a change is judged against its base in the same minutes of the machine. The load: GET
 * /v3/customers/{id} at 50 connections, or GET of the resource `AB_RESOURCE` names, or with
 * `AB_POST='{"path":"/v3/payments/process","body":{…}}'` that POST, each request a new one (a
 * payment, with its workflow); `AB_CONNECTIONS` sets the connections. Per round: requests per second
 * and the CPU microseconds per request of the server (and of its main and workflow threads) and of
 * PostgreSQL (all of its processes); then the medians. Small levers (a few µs per request, or a
 * statement per payment) need this: separate runs drift by ±15–30 % on a shared VM. Also printed:
 * the median of the rounds' own requests-per-second ratio. Both servers run the workflow bundle the
 * bench builds from this checkout's workflows, or with `AB_OWN_BUNDLES=1` each its own checkout's
 * (built by each server at its start).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { createOrm } from '../db/orm.ts';
import { createAccount, createKey } from '../domain/accounts/service.ts';
import { permissionScopes } from '../domain/registry.ts';
import { withDatabase } from '../platform/throwaway-infra.ts';
import { cpuMark, cpuPerOperation } from './cpu.ts';
import { BENCH_ENV, autocannonRun, median, spawnServer, startInfra, stopServer, stripSources } from './harness.ts';

const other = process.argv[2];
if (!other) {
  console.error('Usage: node bench/ab-probe.ts <other-checkout> [rounds]');
  process.exit(64);
}
const rounds = Number(process.argv[3] ?? 6);
/** What is created once and then read by id: a customer, or (AB_RESOURCE='{"path":"/v3/plans","body":{…}}') another resource. */
const resource = JSON.parse(process.env.AB_RESOURCE ?? 'null') as { path: string; body: unknown } | null
  ?? { path: '/v3/customers', body: { email: 'bench@example.com', first_name: 'Bench', last_name: 'Mark' } };
/** A request that creates something new each time (`AB_POST`), instead of the read of `resource`. */
const post = JSON.parse(process.env.AB_POST ?? 'null') as { path: string; body: unknown } | null;
const connections = Number(process.env.AB_CONNECTIONS ?? 50);
/** `AB_OWN_BUNDLES=1`: each side runs the workflow bundle of its own checkout (to A/B a change of workflow code or of the bundle). */
const ownBundles = Boolean(process.env.AB_OWN_BUNDLES);
const infra = await startInfra();
// The other checkout's sources are served stripped too, as this one's are (harness.ts, `stripSources`).
stripSources(resolve(other));
const admin = new pg.Client({ connectionString: infra.adminDbUrl });
await admin.connect();

/** A database migrated by `checkout`'s own migrations, with a premium account, a key and a customer. */
async function side(checkout: string) {
  const database = `bp_bench_${randomBytes(5).toString('hex')}`;
  await admin.query(`create database ${database}`);
  const dbUrl = withDatabase(infra.adminDbUrl, database);
  execFileSync(process.execPath, [resolve(checkout, 'db/migrate.ts')], { env: { ...process.env, DATABASE_URL: dbUrl }, stdio: 'ignore' });
  const orm = await createOrm({ url: dbUrl, poolMax: 2 });
  const accountId = (await createAccount(orm, { name: 'Bench', tier: 'premium' })).id;
  const key = (await createKey(orm, { name: 'bench', type: 'test', accountId }, permissionScopes)).secret;
  await orm.close(true);
  const { child, info } = await spawnServer(resolve(checkout, 'bench/serve.ts'), {
    ...BENCH_ENV, DATABASE_URL: dbUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE_PREFIX: `${database}-`,
    // Without it, each server bundles its own checkout's workflows at start (bench/serve.ts).
    ...(ownBundles ? {} : { WORKFLOW_BUNDLE_PATH: infra.workflowBundlePath }),
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const created = async () => {
    const res = await fetch(`${info.url}${resource.path}`, { method: 'POST', headers, body: JSON.stringify(resource.body) });
    return ((await res.json()) as { id: string }).id;
  };
  const load = post
    ? { url: `${info.url}${post.path}`, method: 'POST' as const, body: JSON.stringify(post.body) }
    : { url: `${info.url}${resource.path}/${await created()}` };
  return {
    name: checkout, pid: child.pid!, opts: { ...load, headers, connections },
    rounds: [] as { rps: number; server: number; main: number; workflow: number; postgres: number }[],
    async close() {
      await stopServer(child);
      await admin.query(`drop database if exists ${database} with (force)`);
    },
  };
}

const sides = [await side(resolve('.')), await side(resolve(other))];
try {
  for (const s of sides) await autocannonRun({ ...s.opts, duration: 3 }); // warm-up
  for (let round = 0; round < rounds; round++) {
    // Always A then B: each run follows the other side's (a side run twice in a row is faster the
    // second time, which alternating the order would give to each side in turn).
    for (const s of sides) {
      // Unmeasured: a server that sat idle while the other was loaded spends its first seconds back
      // at a higher cost per request (its heap and compiled code shrank meanwhile).
      await autocannonRun({ ...s.opts, duration: 2 });
      const mark = cpuMark(s.pid);
      const result = await autocannonRun({ ...s.opts, duration: 5 });
      const { server, server_threads: threads, postgres } = cpuPerOperation(mark, result.total);
      s.rounds.push({ rps: result.requestsPerSec, server, main: threads.main ?? 0, workflow: threads.workflow ?? 0, postgres });
    }
  }
  const [a, b] = sides as [typeof sides[0], typeof sides[0]];
  console.log(JSON.stringify({ rps_ratio_this_to_other: Math.round(median(a.rounds.map((r, i) => r.rps / b.rounds[i]!.rps)) * 1000) / 1000 }));
  for (const s of sides) {
    console.log(JSON.stringify({
      checkout: s.name,
      rps: median(s.rounds.map((r) => r.rps)),
      server_us_per_request: median(s.rounds.map((r) => r.server)),
      main_thread_us_per_request: median(s.rounds.map((r) => r.main)),
      workflow_threads_us_per_request: median(s.rounds.map((r) => r.workflow)),
      postgres_us_per_request: median(s.rounds.map((r) => r.postgres)),
      rounds: s.rounds.map((r) => `${r.rps}/s ${r.server}(main ${r.main})+${r.postgres}us`).join(' '),
    }));
  }
} finally {
  for (const s of sides) await s.close();
  await admin.end();
  await infra.stop();
}
