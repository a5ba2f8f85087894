import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';

/** The `pg` pool under the ORM, for the few hot-path statements written as plain SQL. */
export async function nativePool(orm: MikroORM): Promise<Pool> {
  return orm.em.getConnection().getNativeClient();
}
