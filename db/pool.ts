import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { coalesced, type Coalesced } from '../platform/coalesced.ts';

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

/**
 * For the rest of the transaction, the triggers that NOTIFY at commit — the outbox's `bp_events`
 * (migration 0161) and the stock ledger's `bp_stock_pending` (migration 0160) — leave it to the
 * writer, which calls `notifyAfterCommit` once it committed. PostgreSQL serializes every NOTIFYing
 * commit of the cluster on one lock held through the commit's WAL flush; a NOTIFY on its own writes
 * nothing, holds it for microseconds, and one serves every commit of the same moment. A crash
 * between the commit and the NOTIFY costs the listeners' sweeps (the dispatcher's sweeper, the stock
 * sequencer's) at most.
 */
export const notifyAfterCommitStatement: Statement = { sql: "select set_config('bp.notify', 'after_commit', true)", params: [] };

const AFTER_COMMIT_NOTIFY = "select pg_notify('bp_events', ''), pg_notify('bp_stock_pending', '')";
const notifiers = new WeakMap<object, Coalesced>();

/**
 * NOTIFYs what a commit made with `notifyAfterCommitStatement` left out. One NOTIFY in flight per
 * connection pool: the commits that finish meanwhile share one more after it, so every commit is
 * followed by a NOTIFY sent after it. One that fails is left to the sweeps.
 */
export function notifyAfterCommit(em: EntityManager): void {
  const connection = em.getConnection();
  let notifier = notifiers.get(connection);
  if (!notifier) {
    notifier = coalesced(() => connection.execute(AFTER_COMMIT_NOTIFY).catch(() => undefined));
    notifiers.set(connection, notifier);
  }
  notifier.request();
}
