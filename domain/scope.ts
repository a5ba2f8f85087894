import { p } from '@mikro-orm/core';
import type { EntityManager, EntityName, MikroORM } from '@mikro-orm/postgresql';

/**
 * Every business record belongs to one account and one mode (live or test). The `scope` filter,
 * on by default for every scoped entity, adds `account_id = ? AND livemode = ?` to each query,
 * and `scopedEm` is the only way request and activity code gets an EntityManager for business
 * data, so no handler has to remember the condition. A scoped query without scope parameters fails.
 */
export interface Scope {
  accountId: string;
  livemode: boolean;
}

export const SCOPE_FILTER = 'scope';

export const scopeFilter = {
  [SCOPE_FILTER]: {
    name: SCOPE_FILTER,
    cond: (args: Record<string, unknown>) => ({ accountId: args.accountId, livemode: args.livemode }),
    default: true,
    args: true,
    strict: true,
  },
};

/**
 * The columns every scoped record starts with: its prefixed id, its account and its mode. Scoped
 * entities spread these into `properties` and declare `filters: scopeFilter`.
 */
export function scopedColumns() {
  return { id: p.string().primary(), accountId: p.string(), livemode: p.boolean() };
}

/** A fresh EntityManager (own identity map) whose queries are confined to `scope`. */
export function scopedEm(orm: MikroORM, scope: Scope): EntityManager {
  const em = orm.em.fork();
  em.setFilterParams(SCOPE_FILTER, { accountId: scope.accountId, livemode: scope.livemode });
  return em;
}

/** Columns every scoped record carries, for `em.create`. */
export function scopeColumns(scope: Scope): { accountId: string; livemode: boolean } {
  return { accountId: scope.accountId, livemode: scope.livemode };
}

/**
 * One record by id within the EntityManager's scope, for hot reads: a single query-builder SELECT
 * mapped to an entity, skipping `findOne`'s generic criteria processing (about half its cost).
 * The scope comes from the EntityManager's filter parameters, as for every other scoped query.
 */
export async function findScopedById<T extends object>(em: EntityManager, entity: EntityName<T>, id: string): Promise<T | null> {
  const scope = em.getFilterParams<Scope>(SCOPE_FILTER);
  if (!scope) throw new Error('findScopedById needs an EntityManager from scopedEm()');
  const row = await em.createQueryBuilder(entity)
    .select('*')
    .where({ id, accountId: scope.accountId, livemode: scope.livemode } as never)
    .limit(1)
    .execute('get', false);
  return row ? em.map(entity, row as never) : null;
}
