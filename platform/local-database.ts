import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { withDatabase } from './throwaway-infra.ts';

/**
 * The development database when no DATABASE_URL is given: an embedded PostgreSQL under `.data/`
 * that keeps its data between runs. While `npm start` runs, it records the server's URL in
 * `.data/postgres.json`, so the CLI talks to the same server instead of starting a second one.
 */
export const DEFAULT_DATA_DIR = join(import.meta.dirname, '..', '.data');
export const LOCAL_DATABASE = 'business_platform';
const runningFile = (dataDir: string) => join(dataDir, 'postgres.json');

export interface LocalDatabase {
  /** URL of the `business_platform` database. */
  url: string;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The embedded server `npm start` is running, if any. */
export async function runningLocalDatabase(dataDir: string): Promise<string | null> {
  if (!existsSync(runningFile(dataDir))) return null;
  const { url } = JSON.parse(readFileSync(runningFile(dataDir), 'utf8')) as { url: string };
  return (await reachable(url)) ? url : null;
}

/** Where the database came from: DATABASE_URL, the embedded server `npm start` runs, or one started now. */
export type DatabaseSource = 'DATABASE_URL' | 'embedded (running)' | 'embedded (started)';

export interface ResolvedDatabase extends LocalDatabase {
  source: DatabaseSource;
}

/**
 * The one way every entry point (`npm start`, the CLI) finds its database, from the validated
 * config (so an empty DATABASE_URL means "unset" for both): DATABASE_URL when set, else the
 * embedded server under DATA_DIR (default `.data/`), the running one if `npm start` runs.
 * `advertise`: record a server this process starts so others find it (`npm start` only).
 */
export async function resolveDatabase(
  config: { DATABASE_URL?: string | undefined; DATA_DIR?: string | undefined },
  opts: { advertise: boolean },
): Promise<ResolvedDatabase> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };
  const dataDir = config.DATA_DIR ?? DEFAULT_DATA_DIR;
  const running = await runningLocalDatabase(dataDir);
  if (running) return { url: running, source: 'embedded (running)', stop: async () => undefined };
  return { ...(await openLocalDatabase({ dataDir, advertise: opts.advertise })), source: 'embedded (started)' };
}

/** A connection URL fit to print: the password masked. */
export function maskDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** Uses the running embedded server, or starts one (creating the database on first use). */
export async function openLocalDatabase(opts: { dataDir: string; advertise: boolean }): Promise<LocalDatabase> {
  const running = await runningLocalDatabase(opts.dataDir);
  if (running) return { url: running, stop: async () => undefined };

  const { startEmbeddedPostgres } = await import('./embedded-postgres.ts');
  const server = await startEmbeddedPostgres({ dataDir: join(opts.dataDir, 'postgres'), persistent: true });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const exists = await admin.query('select 1 from pg_database where datname = $1', [LOCAL_DATABASE]);
    if (!exists.rowCount) await admin.query(`create database ${LOCAL_DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(server.url, LOCAL_DATABASE);
  if (opts.advertise) writeFileSync(runningFile(opts.dataDir), JSON.stringify({ url, pid: process.pid }));
  return {
    url,
    async stop() {
      if (opts.advertise) rmSync(runningFile(opts.dataDir), { force: true });
      await server.stop();
    },
  };
}
