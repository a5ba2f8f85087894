import { MikroORM, defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Pool } from 'pg';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';

export interface OrmOptions {
  url: string;
  poolMax?: number;
  debug?: boolean;
}

export function ormConfig(opts: OrmOptions) {
  return defineConfig({
    clientUrl: opts.url,
    entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    pool: { min: 0, max: opts.poolMax ?? 20 },
    debug: opts.debug ?? false,
    // Entities are plain data to the API layer; never let a request lazily load across awaits.
    forceUtcTimezone: true,
    ensureDatabase: false,
    allowGlobalContext: false,
  });
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

/** The `pg` pool under the ORM, for the few hot-path statements written as plain SQL. */
export async function nativePool(orm: MikroORM): Promise<Pool> {
  return orm.em.getConnection().getNativeClient();
}

export type { MikroORM };
