import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';

/** The `pg` pool under the ORM, for the few hot-path statements written as plain SQL. */
export async function nativePool(orm: MikroORM): Promise<Pool> {
  return orm.em.getConnection().getNativeClient();
}

/** A statement with `?` placeholders and its values, as `em.execute` takes them. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * Statements run together in one round trip: one message of the simple query protocol, which
 * PostgreSQL runs as one implicit transaction — every statement, or, when one fails, none (its
 * error is thrown). No client step runs between them, so a row lock one of them takes is held only
 * while the server runs the rest and commits, however busy this process is. Inside `em`'s
 * transaction when it has one (they then commit or roll back with it). The values are inlined as
 * literals by the ORM's quoting, as `em.execute` does.
 */
export async function inOneTransaction(em: EntityManager, statements: readonly Statement[]): Promise<void> {
  const platform = em.getPlatform();
  // Formatted here, so the message goes with no parameters: pg then uses the simple query protocol,
  // the one that takes several statements.
  await em.execute(statements.map(({ sql, params }) => platform.formatQuery(sql, params)).join(';\n'));
}
