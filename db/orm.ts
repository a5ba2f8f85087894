import { MikroORM, defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities, migrations } from '../domain/registry.ts';
import { clientWithReadTimeout } from './read-timeout.ts';

export interface OrmOptions {
  url: string;
  poolMax?: number;
  debug?: boolean;
  /**
   * Longest a statement may run (server-side `statement_timeout`, and the client gives up a second
   * later); 0 for none (migrations). Default 5 s: a request never hangs on the database.
   */
  statementTimeoutMs?: number;
}

/** How long opening a connection may take before the request fails (as a 503). */
export const CONNECT_TIMEOUT_MS = 3000;
export const STATEMENT_TIMEOUT_MS = 5000;

export function ormConfig(opts: OrmOptions) {
  return defineConfig({
    clientUrl: opts.url,
    entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    pool: { min: 0, max: opts.poolMax ?? 20 },
    // A database that is down or unreachable fails the request within seconds (503), not minutes.
    driverOptions: timeoutOptions(opts.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS),
    debug: opts.debug ?? false,
    // Entities are plain data to the API layer; never let a request lazily load across awaits.
    forceUtcTimezone: true,
    ensureDatabase: false,
    allowGlobalContext: false,
  });
}

function timeoutOptions(statementMs: number): Record<string, unknown> {
  return {
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // The client gives up a second after the server would have (db/read-timeout.ts: pg's own
    // `query_timeout`, a timer per query, made every query's objects outlive the young generation).
    ...(statementMs > 0 ? { statement_timeout: statementMs, Client: clientWithReadTimeout(statementMs + 1000) } : {}),
  };
}

/** One MikroORM instance per process, built at start-up and passed down. */
export async function createOrm(opts: OrmOptions): Promise<MikroORM> {
  return MikroORM.init(ormConfig(opts));
}

/** Runs the checked-in migrations that have not run yet. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const done = await orm.migrator.up();
  return done.map((m) => m.name);
}

export type { MikroORM };
