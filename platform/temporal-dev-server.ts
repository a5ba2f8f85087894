/**
 * Starts a local Temporal dev server (`temporal server start-dev`) for development and tests.
 * The CLI comes from TEMPORAL_CLI, PATH, a cached build in `.tools/bin`, or is built once with Go;
 * without any of those, `@temporalio/testing` is asked to download one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { PROJECT_ROOT, TOOLS_BIN, findGo, findOnPath, isExecutable } from './executables.ts';
// Loaded lazily so that resolveTemporalCli() works before `npm ci` (CI provisions the CLI first).
import type { Connection } from '@temporalio/client';

export const SEARCH_ATTRIBUTES = {
  BpAccountId: 'Keyword',
  BpMode: 'Keyword',
  BpCustomerId: 'Keyword',
  BpResourceId: 'Keyword',
  BpStatus: 'Keyword',
} as const;

/**
 * Dynamic config of the dev servers we start. Each task queue's new tasks go to one partition (the
 * server's default is four): with four, a share of the workflow tasks written to the child
 * partitions waited about 2 s before a poll picked them up, whatever the number of pollers
 * (bench: an empty workflow's p99 2.1 s against 0.13 s, docs/benchmarks.md "Task queue
 * partitions"). The four read partitions stay, so a persisted server (`npm start`'s SQLite file)
 * still drains a backlog written to the others before this setting: Temporal's order for reducing
 * partitions (write first, read after the backlog is gone).
 */
export const DEV_SERVER_DYNAMIC_CONFIG = {
  'matching.numTaskqueueWritePartitions': 1,
  // Batch operations (terminate, cancel, signal … from the Temporal UI or the CLI, and the bench's
  // cleanup of the workflows its runs leave) at up to 500 workflows a second; the server's default
  // caps every batch at 50, which made ending a bench run's 10,000 order workflows take minutes.
  'worker.batcherRPS': 500,
} as const;

/** The `start-dev` arguments every dev server we start gets: the search attributes and the dynamic config above. */
function devServerArgs(): string[] {
  return [
    ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
    ...Object.entries(DEV_SERVER_DYNAMIC_CONFIG).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
  ];
}

export interface TemporalDevServer {
  address: string;
  namespace: string;
  uiUrl: string | null;
  stop(): Promise<void>;
}

export interface StartDevServerOptions {
  /** SQLite file for persistent state; null/undefined = in-memory. */
  dbFile?: string | null;
  /** Frontend gRPC port; default: a free port. */
  port?: number;
  /** Web UI port; null = headless, undefined = port + 1000 (or a free port if that is taken). */
  uiPort?: number | null;
  /** Namespace to create; default 'default'. */
  namespace?: string;
  /** Where the server's output goes; default: a temporary file, removed on stop. */
  logFile?: string | null;
}

export type TemporalCliSource = 'path' | 'cache' | 'built';

const CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;

// Wire values of temporal.api.enums.v1.IndexedValueType (stable protobuf enum numbers).
const INDEXED_VALUE_TYPE = { Text: 1, Keyword: 2, Int: 3, Double: 4, Bool: 5, Datetime: 6, KeywordList: 7 } as const;

const NO_SERVER_MESSAGE =
  'No Temporal server available: install the Temporal CLI (https://docs.temporal.io/cli) or Go ' +
  '(to build it), or set TEMPORAL_ADDRESS to an existing server.';

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log output)';
  }
}

let building: Promise<string | null> | null = null;

/** Builds the CLI into `.tools/bin` with Go; null (with a note on stderr) if the build fails. */
function buildWithGo(go: string): Promise<string | null> {
  building ??= (async () => {
    await mkdir(TOOLS_BIN, { recursive: true });
    const logFile = join(PROJECT_ROOT, '.tools', 'temporal-build.log');
    process.stderr.write(`Building the Temporal CLI once, this takes several minutes (log: ${logFile}) ...\n`);
    const started = Date.now();
    const log = createWriteStream(logFile);
    const child = spawn(go, ['install', CLI_MODULE], {
      env: { ...process.env, GOBIN: TOOLS_BIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    const code = await new Promise<number | null>((done) => {
      child.on('error', () => done(-1));
      child.on('close', (c) => done(c));
    });
    await new Promise<void>((done) => log.end(done));
    const cli = join(TOOLS_BIN, 'temporal');
    if (code === 0 && isExecutable(cli)) {
      process.stderr.write(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s.\n`);
      return cli;
    }
    process.stderr.write(`Building the Temporal CLI failed (exit ${code}):\n${tail(logFile, 15)}\n`);
    return null;
  })();
  return building;
}

export async function resolveTemporalCli(): Promise<{ path: string; source: TemporalCliSource } | null> {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI=${fromEnv} is not an executable file.`);
    return { path: fromEnv, source: 'path' };
  }
  const onPath = findOnPath('temporal');
  if (onPath) return { path: onPath, source: 'path' };
  const cached = join(TOOLS_BIN, 'temporal');
  if (isExecutable(cached)) return { path: cached, source: 'cache' };
  const go = findGo();
  if (!go) return null;
  const built = await buildWithGo(go);
  return built ? { path: built, source: 'built' } : null;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

/** Registers any SEARCH_ATTRIBUTES the namespace lacks (e.g. a persisted DB created by an older version). */
async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in (customAttributes ?? {})));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_VALUE_TYPE[type]])),
  });
}

/** Polls until the frontend answers for the namespace; throws if `alive()` turns false or time runs out. */
async function waitUntilReady(address: string, namespace: string, alive: () => boolean, logFile: string): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`Temporal dev server exited during startup. Log tail (${logFile}):\n${tail(logFile)}`);
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.describeNamespace({ namespace });
      await ensureSearchAttributes(connection, namespace);
      return;
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 250));
    } finally {
      await connection?.close().catch(() => undefined);
    }
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new Error(
    `Temporal dev server did not come up at ${address} within ${READY_TIMEOUT_MS / 1000} s (${reason}). ` +
      `Log tail (${logFile}):\n${tail(logFile)}`,
  );
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

// Servers still running in this process; the hooks below make sure none outlives it.
const live = new Set<ChildProcess>();
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
// Marks handlers that only forward a signal to child servers (shared by name, so other modules can
// use it too): they do not count as the application handling the signal itself.
const FORWARDER = Symbol.for('business-platform.signal-forwarder');

function onParentExit(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
}

// Ctrl-C reaches the terminal's process group, which no longer includes the servers. Unless the
// application handles the signal itself (it then calls stop() or exits), pass it on, then let it
// take its default course.
const onParentSignal = Object.assign(
  (signal: NodeJS.Signals): void => {
    if (process.listeners(signal).some((listener) => !(FORWARDER in listener))) return;
    for (const child of live) killGroup(child, 'SIGTERM');
    live.clear();
    setParentHooks(false);
    process.kill(process.pid, signal);
  },
  { [FORWARDER]: true },
);

function setParentHooks(on: boolean): void {
  if (on) {
    process.on('exit', onParentExit);
    for (const s of SIGNALS) process.on(s, onParentSignal);
  } else {
    process.off('exit', onParentExit);
    for (const s of SIGNALS) process.off(s, onParentSignal);
  }
}

function track(child: ChildProcess, running: boolean): void {
  const before = live.size;
  if (running) live.add(child);
  else live.delete(child);
  if (before === 0 && live.size > 0) setParentHooks(true);
  if (before > 0 && live.size === 0) setParentHooks(false);
}

async function startWithCli(cli: string, opts: StartDevServerOptions): Promise<TemporalDevServer> {
  const namespace = opts.namespace ?? 'default';
  const port = opts.port ?? (await freePort());
  const uiPort =
    opts.uiPort === null ? null : (opts.uiPort ?? ((await portFree(port + 1000)) ? port + 1000 : await freePort()));
  // The dev server does not reliably fail on a taken port, and we would then talk to someone else's server.
  for (const p of [port, uiPort]) {
    if (p !== null && !(await portFree(p))) throw new Error(`Cannot start the Temporal dev server: port ${p} is in use.`);
  }
  const logFile = opts.logFile ?? join(await mkdtemp(join(tmpdir(), 'temporal-dev-')), 'server.log');
  const tempLogDir = opts.logFile ? null : dirname(logFile);
  await mkdir(dirname(logFile), { recursive: true });

  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  // "default" is always created; passing it again makes the server try to insert it twice.
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (opts.dbFile) {
    await mkdir(dirname(resolve(opts.dbFile)), { recursive: true });
    args.push('--db-filename', opts.dbFile);
    args.push('--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=NORMAL');
  }
  args.push(...(uiPort === null ? ['--headless'] : ['--ui-port', String(uiPort)]), ...devServerArgs());

  const logFd = openSync(logFile, 'a');
  // Own process group, so stop() takes down the server and anything it spawned.
  const child = spawn(cli, args, { detached: true, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  let running = true;
  const exited = new Promise<void>((done) => {
    child.once('exit', () => done());
    child.once('error', () => done());
  }).then(() => {
    running = false;
  });
  track(child, true);

  const terminate = async (graceful: boolean): Promise<void> => {
    killGroup(child, graceful ? 'SIGTERM' : 'SIGKILL');
    const force = setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
    if (running) await exited;
    clearTimeout(force);
    track(child, false);
  };

  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilReady(address, namespace, () => running, logFile);
    if (!running) throw new Error(`Temporal dev server exited during startup. Log tail (${logFile}):\n${tail(logFile)}`);
  } catch (error) {
    await terminate(false); // keeps the log the error points to
    throw error;
  }

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopping ??= terminate(true).then(() => (tempLogDir ? rm(tempLogDir, { recursive: true, force: true }) : undefined)));
  return { address, namespace, uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`, stop };
}

async function startWithTestingPackage(opts: StartDevServerOptions): Promise<TemporalDevServer> {
  // Dev dependency: imported lazily so production code paths never need it.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const namespace = opts.namespace ?? 'default';
  const port = opts.port ?? (await freePort());
  const uiPort = opts.uiPort === null ? null : (opts.uiPort ?? port + 1000);
  const extraArgs = devServerArgs();
  if (opts.dbFile) {
    await mkdir(dirname(resolve(opts.dbFile)), { recursive: true });
    extraArgs.push('--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=NORMAL');
  }
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port,
      namespace,
      ...(opts.dbFile ? { dbFilename: opts.dbFile } : {}),
      ...(uiPort === null ? { ui: false } : { ui: true, uiPort }),
      log: { format: 'pretty', level: 'warn' },
      extraArgs,
    },
  });
  try {
    await ensureSearchAttributes(env.connection, namespace);
  } catch (error) {
    await env.teardown();
    throw error;
  }
  return {
    address: env.address,
    namespace,
    uiUrl: uiPort === null ? null : `http://127.0.0.1:${uiPort}`,
    stop: () => env.teardown(),
  };
}

export async function startTemporalDevServer(opts: StartDevServerOptions): Promise<TemporalDevServer> {
  const cli = await resolveTemporalCli();
  if (cli) return startWithCli(cli.path, opts);
  try {
    return await startWithTestingPackage(opts);
  } catch (error) {
    throw new Error(NO_SERVER_MESSAGE, { cause: error });
  }
}
