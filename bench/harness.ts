import { permissionScopes } from '../domain/registry.ts';
import { Connection, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createOrm, migrate, type MikroORM } from '../db/orm.ts';
import { startThrowawayInfra, withDatabase } from '../platform/throwaway-infra.ts';
import { createAccount, createKey, type CreateKeyInput } from '../domain/accounts/service.ts';
import { buildWorkflowBundle } from '../worker/worker.ts';

/**
 * Benchmarks run the platform as it runs in production: the API and worker in their own process
 * (`bench/serve.ts`), load from this process with autocannon over loopback, on a fresh database.
 */
export interface BenchPlatform extends Omit<BenchDatabase, 'drop'> {
  url: string;
  temporalAddress: string;
  /** The API + worker process. */
  pid: number;
  /** Peak resident memory of the API + worker process so far (Linux VmHWM), in MB; null elsewhere. */
  peakRssMb(): number | null;
  close(): Promise<void>;
}

export interface Scenario {
  name: string;
  /** Extra environment for the platform process of this scenario. */
  env?: Record<string, string>;
  run(platform: BenchPlatform): Promise<Record<string, unknown>>;
}

/** A scenario that starts its own processes (bench/scale.ts) instead of the one platform process. */
export interface StandaloneScenario {
  name: string;
  /** Its result, and the peak resident memory (MB) of the largest process it ran, for the summary's RSS column. */
  standalone(infra: Infra): Promise<{ result: Record<string, unknown>; rssMb: number | null }>;
}

export interface LoadResult {
  requestsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

export const BENCH_ENV: Record<string, string> = {
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
  RATE_LIMIT_PER_MINUTE: '100000000',
  RATE_LIMIT_PER_MINUTE_PREMIUM: '100000000',
  RATE_LIMIT_PER_DAY: '100000000',
  RATE_LIMIT_CONCURRENCY: '100000',
};

export interface Infra {
  adminDbUrl: string;
  temporalAddress: string;
  /** The workflow bundle (the platform's workflows and the bench's empty one), built once per run. */
  workflowBundlePath: string;
  stop(): Promise<void>;
}

/** PostgreSQL (BENCH_DATABASE_URL, else embedded) and Temporal (TEMPORAL_ADDRESS, else a dev server). */
export async function startInfra(): Promise<Infra> {
  const work = mkdtempSync(join(tmpdir(), 'bp-bench-'));
  if (process.env.BENCH_TYPE_STRIPPING === 'node') delete process.env.BENCH_STRIPPED_SOURCES;
  else {
    process.env.BENCH_STRIPPED_SOURCES = join(work, 'stripped');
    stripSources(fileURLToPath(new URL('..', import.meta.url)));
  }
  const { adminDbUrl, temporalAddress, stops } = await startThrowawayInfra({
    databaseUrl: process.env.BENCH_DATABASE_URL, temporalAddress: process.env.TEMPORAL_ADDRESS, workDir: work,
  });
  // Built here once, not in each server process: production loads a prebuilt bundle too, and
  // webpack's peak would otherwise be counted in the server's resident memory.
  const workflowBundlePath = join(work, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, (await buildWorkflowBundle([new URL('./baseline-workflow.ts', import.meta.url)])).code);
  return {
    adminDbUrl, temporalAddress, workflowBundlePath,
    async stop() {
      for (const stop of stops.reverse()) await stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}


/**
 * The servers' sources are stripped of their types here, in the bench process, instead of by Node in
 * each server process and thread (`BENCH_TYPE_STRIPPING=node` leaves it to Node). The JavaScript is
 * the same (`stripTypeScriptTypes` is the transform Node's loader applies to a `.ts` file, positions
 * kept); what changes is that no server thread loads Node's type stripper (swc compiled to
 * WebAssembly), which production, running the compiled `dist/`, never holds: 15–35 MB of the idle
 * bench server (docs/benchmarks.md, "The type stripper's memory"). `stripSources(root)` strips every `.ts` file of a checkout into
 * BENCH_STRIPPED_SOURCES, under its absolute path (bench/ab-probe.ts adds the other checkout); the
 * loader hook below, which each server process and worker thread imports first (`--import`; worker
 * threads inherit it), answers a `.ts` module from there, and leaves one not found there to Node.
 */
export function stripSources(root: string): void {
  const into = process.env.BENCH_STRIPPED_SOURCES;
  if (!into) return;
  // Top-level folders no server loads (the dashboard's browser sources among them; the server's
  // dashboard area, domain/dashboard, is stripped like every other area).
  const skip = new Set(['node_modules', 'dist', 'dashboard', 'test', 'coverage'].map((name) => join(root, name)));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || skip.has(join(dir, entry.name))) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const out = join(into, path);
        mkdirSync(dirname(out), { recursive: true });
        writeFileSync(out, stripTypeScriptTypes(readFileSync(path, 'utf8'), { mode: 'strip' }));
      }
    }
  };
  walk(root);
}

const STRIPPED_SOURCES_HOOK = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
const dir = process.env.BENCH_STRIPPED_SOURCES;
if (dir) registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:') && url.endsWith('.ts')) {
      let source;
      try { source = readFileSync(join(dir, fileURLToPath(url)), 'utf8'); } catch {}
      if (source !== undefined) return { format: 'module', source, shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});
`)}`;

/** `node <script>` (relative to bench/) with `env` over this process's environment. */
function spawnNode(script: string, env: Record<string, string>): ChildProcess {
  // BENCH_PROFILE=DIR writes a V8 CPU profile of every server process into DIR (open it in Chrome DevTools).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // BENCH_NODE_FLAGS="--flag …": Node and V8 flags for every server process (V8's GC flags, which
  // NODE_OPTIONS does not accept).
  const flags = process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  const stripped = process.env.BENCH_STRIPPED_SOURCES ? ['--import', STRIPPED_SOURCES_HOOK] : [];
  return spawn(process.execPath, [...profile, ...flags, ...stripped, fileURLToPath(new URL(script, import.meta.url))], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  });
}

const outputReaders: ((chunk: Buffer, pid: number) => void)[] = [];

/** Hands every server process's stdout from now on to `reader` too (bench/gc-probe.ts reads V8's GC trace there). */
export function readServerOutput(reader: (chunk: Buffer, pid: number) => void): void {
  outputReaders.push(reader);
}

/** BENCH_SERVER_LOG=1 passes a server's log lines on (to stderr); otherwise they are dropped. */
function passOutput(child: ChildProcess): void {
  for (const reader of outputReaders) child.stdout!.on('data', (chunk: Buffer) => reader(chunk, child.pid!));
  if (process.env.BENCH_SERVER_LOG) child.stdout!.pipe(process.stderr);
  else child.stdout!.resume();
}

/** Spawns `node <script>` and resolves once `readyUrl` answers 200 (an entry point that prints no ready line). */
export async function spawnProcess(script: string, env: Record<string, string>, readyUrl: string): Promise<ChildProcess> {
  const child = spawnNode(script, env);
  passOutput(child);
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`))));
  exited.catch(() => undefined);
  for (;;) {
    const ok = await Promise.race([fetch(readyUrl).then((r) => r.ok, () => false), exited]);
    if (ok) return child;
    await Promise.race([new Promise((r) => setTimeout(r, 200)), exited]);
  }
}

/** Spawns `node <script>` and resolves with the `{"url": …}` line it prints on stdout when ready. */
export async function spawnServer(script: string, env: Record<string, string>): Promise<{ child: ChildProcess; info: Record<string, string> }> {
  const child = spawnNode(script, env);
  const info = await new Promise<Record<string, string>>((resolve, reject) => {
    let buffer = '';
    const ready = (chunk: Buffer) => {
      buffer += chunk.toString();
      // The ready line is `{"url":…}`; JSON log lines (LOG_LEVEL=info or debug) may come first.
      const line = buffer.split('\n').find((l) => l.startsWith('{"url"'));
      if (!line) return;
      child.stdout!.off('data', ready);
      resolve(JSON.parse(line));
    };
    child.stdout!.on('data', ready);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  passOutput(child);
  return { child, info };
}

export async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** A fresh, migrated database of its own, with a premium account for keys; `taskQueuePrefix` is derived from its name. */
export interface BenchDatabase {
  dbUrl: string;
  taskQueuePrefix: string;
  orm: MikroORM;
  newAccount(tier?: 'standard' | 'premium'): Promise<string>;
  /** A key on a premium account by default (the bench env lifts the limits; the pipeline still counts them). */
  newKey(input?: Partial<CreateKeyInput>): Promise<string>;
  sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export async function createBenchDatabase(infra: Infra): Promise<BenchDatabase> {
  const database = `bp_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: infra.adminDbUrl });
  await admin.connect();
  await admin.query(`create database ${database}`);
  const dbUrl = withDatabase(infra.adminDbUrl, database);
  const orm = await createOrm({ url: dbUrl, poolMax: 10 });
  await migrate(orm);
  const premium = (await createAccount(orm, { name: 'Bench', tier: 'premium' })).id;
  return {
    dbUrl, taskQueuePrefix: `${database}-`, orm,
    async newAccount(tier = 'premium') {
      return (await createAccount(orm, { name: `Bench ${randomBytes(3).toString('hex')}`, tier })).id;
    },
    async newKey(input = {}) {
      return (await createKey(orm, { name: 'bench', type: 'test', accountId: premium, ...input }, permissionScopes)).secret;
    },
    async sql(text, values) {
      return (await (await orm.em.getConnection().getNativeClient()).query(text, values)).rows;
    },
    async drop() {
      await endLeftoverWorkflows(infra.temporalAddress, `${database}-`);
      await orm.close(true);
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    },
  };
}

const { BatchOperationState } = proto.temporal.api.enums.v1;

/**
 * Terminates the workflows a run left running on its task queues (orders waiting for their
 * fulfilment, subscriptions for their next period …) by one batch operation, and waits for the
 * server to finish it (up to 500 a second where the server's `worker.batcherRPS` allows it, as in
 * the dev servers the project starts; the server's default caps a batch at 50): on a shared server
 * (TEMPORAL_ADDRESS) they would otherwise pile up over a day of runs (28,000 once), and the next
 * scenario, run or test suite would share the server's CPU with their timers and terminations.
 */
async function endLeftoverWorkflows(address: string, taskQueuePrefix: string): Promise<void> {
  const connection = await Connection.connect({ address });
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const jobId = `bench-cleanup-${randomUUID()}`;
  try {
    await connection.workflowService.startBatchOperation({
      namespace, jobId, reason: 'benchmark run finished',
      visibilityQuery: `ExecutionStatus = "Running" AND TaskQueue STARTS_WITH "${taskQueuePrefix}"`,
      terminationOperation: {},
      maxOperationsPerSecond: 500,
    });
    const until = Date.now() + 300_000;
    for (;;) {
      const job = await connection.workflowService.describeBatchOperation({ namespace, jobId }).catch(() => null); // not visible yet
      const state = job?.state ?? BatchOperationState.BATCH_OPERATION_STATE_UNSPECIFIED;
      if (state !== BatchOperationState.BATCH_OPERATION_STATE_RUNNING && state !== BatchOperationState.BATCH_OPERATION_STATE_UNSPECIFIED) break;
      if (Date.now() > until) {
        console.error(`bench: still ending this run's workflows after 5 minutes (${job?.completeOperationCount} of ${job?.totalOperationCount}); going on`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } catch (err) {
    console.error(`bench: could not end this run's workflows (${(err as Error).message}); they stay on the Temporal server`);
  } finally {
    await connection.close();
  }
}

/** Peak resident memory of a process so far (Linux VmHWM), in MB; null once it is gone or elsewhere. */
export function peakRssMbOf(pid: number | undefined): number | null {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

export async function startBenchPlatform(infra: Infra, opts: { env?: Record<string, string> } = {}): Promise<BenchPlatform> {
  const db = await createBenchDatabase(infra);
  const { child, info } = await spawnServer('./serve.ts', {
    ...BENCH_ENV, DATABASE_URL: db.dbUrl, TEMPORAL_ADDRESS: infra.temporalAddress, TASK_QUEUE_PREFIX: db.taskQueuePrefix,
    WORKFLOW_BUNDLE_PATH: infra.workflowBundlePath, ...opts.env,
  });
  return {
    ...db, url: info.url!, temporalAddress: infra.temporalAddress, pid: child.pid!,
    peakRssMb: () => peakRssMbOf(child.pid),
    async close() {
      await stopServer(child);
      await db.drop();
    },
  };
}

/** A request to the bench's platform with `key`; its JSON answer, or an error naming the status and the answer. */
export async function post(url: string, key: string, path: string, body: unknown, method = 'POST'): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * Load options for POST /v3/subscriptions: monthly subscriptions of one new customer to one new plan,
 * with the test card, each request a new subscription (with its workflow).
 */
export async function subscriptionsLoad(platform: BenchPlatform, connections: number) {
  const key = await platform.newKey();
  const customer = await post(platform.url, key, '/v3/customers', { email: 'bench@example.com', name: 'Bench' });
  const plan = await post(platform.url, key, '/v3/plans', { name: 'Bench', currency: 'USD', interval: 'monthly', amount: 1500 });
  return {
    url: `${platform.url}/v3/subscriptions`, method: 'POST' as const, connections,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ customer_id: customer.id, plan_id: plan.id, payment_method: testCard() }),
  };
}

/** The sandbox's always-succeeding test card (docs/payments.md), as a payment method in a request body. */
export function testCard() {
  return { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' } };
}

/** Load options for POST /v3/payments/process with the test card, each request a new payment (with its workflow). */
export async function paymentsLoad(platform: BenchPlatform, connections: number) {
  return {
    url: `${platform.url}/v3/payments/process`, method: 'POST' as const, connections,
    headers: { authorization: `Bearer ${await platform.newKey()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 1999, currency: 'USD', payment_method: testCard() }),
  };
}

/** The p-th percentile of ascending `sorted` (nearest rank); 0 when empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : 0;
}

/** The median of unsorted values (of alternating rounds: a slower stretch of the machine weighs on both sides alike). */
export function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

export async function autocannonRun(opts: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ duration: 10, connections: 50, ...opts });
  return {
    requestsPerSec: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

/**
 * The bare Temporal figure the workflow scenarios compare with: `clients` loops starting and
 * awaiting the bench's empty workflow (bench/baseline-workflow.ts) on `taskQueue` for `seconds`.
 */
export async function emptyWorkflows(client: Client, taskQueue: string, clients: number, seconds: number) {
  const latencies: number[] = [];
  const until = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < until) {
      const t0 = performance.now();
      await client.workflow.execute('paymentsBaselineWorkflow', { taskQueue, workflowId: `bench-empty-${randomUUID()}` });
      latencies.push(performance.now() - t0);
    }
  }));
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length, perSec: Math.round(latencies.length / seconds),
    p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)),
  };
}
