/**
 * `scripts/node24.sh node bench/ab-probe.ts <other-checkout> [rounds]`: this checkout's API against
 * another checkout's (a `git worktree` of main, say), both up at once, each on its own database
 * migrated by its own code, loaded in alternating 5 s rounds of GET /v3/customers/{id} (or the
 * resource `AB_RESOURCE` names) at 50
 * connections (each after 2 s unmeasured), so a change is judged against its base in the same minutes of the machine. Per round:
 * requests per second and the CPU microseconds per request of the server and of PostgreSQL (all of
 * its processes); then the medians. Small levers (a few µs per request) need this: separate runs
 * drift by ±15 % on a shared VM. Also printed: the median of the rounds' own requests-per-second ratio.
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
import { BENCH_ENV, autocannonRun, median, spawnServer, startInfra, stopServer } from './harness.ts';

const other = process.argv[2];
if (!other) {
  console.error('Usage: node bench/ab-probe.ts <other-checkout> [rounds]');
  process.exit(64);
}
const rounds = Number(process.argv[3] ?? 6);
/** What is created once and then read by id: a customer, or (AB_RESOURCE='{"path":"/v3/plans","body":{…}}') another resource. */
const resource = JSON.parse(process.env.AB_RESOURCE ?? 'null') as { path: string; body: unknown } | null
  ?? { path: '/v3/customers', body: { email: 'bench@example.com', first_name: 'Bench', last_name: 'Mark' } };
const infra = await startInfra();
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
    WORKFLOW_BUNDLE_PATH: infra.workflowBundlePath,
  });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const created = (await (await fetch(`${info.url}${resource.path}`, { method: 'POST', headers, body: JSON.stringify(resource.body) })).json()) as { id: string };
  return {
    name: checkout, pid: child.pid!, opts: { url: `${info.url}${resource.path}/${created.id}`, headers, connections: 50 },
    rounds: [] as { rps: number; server: number; postgres: number }[],
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
      const { server, postgres } = cpuPerOperation(mark, result.total);
      s.rounds.push({ rps: result.requestsPerSec, server, postgres });
    }
  }
  const [a, b] = sides as [typeof sides[0], typeof sides[0]];
  console.log(JSON.stringify({ rps_ratio_this_to_other: Math.round(median(a.rounds.map((r, i) => r.rps / b.rounds[i]!.rps)) * 1000) / 1000 }));
  for (const s of sides) {
    console.log(JSON.stringify({
      checkout: s.name,
      rps: median(s.rounds.map((r) => r.rps)),
      server_us_per_request: median(s.rounds.map((r) => r.server)),
      postgres_us_per_request: median(s.rounds.map((r) => r.postgres)),
      rounds: s.rounds.map((r) => `${r.rps}/s ${r.server}+${r.postgres}us`).join(' '),
    }));
  }
} finally {
  for (const s of sides) await s.close();
  await admin.end();
  await infra.stop();
}
