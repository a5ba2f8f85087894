import { p } from '@mikro-orm/core';
import type { EntityManager, EntityName, MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../platform/errors.ts';

/**
 * Every business record belongs to one account and one mode (live or test). The `scope` filter,
 * on by default for every scoped entity, adds `account_id = ? AND livemode = ?` to each query,
 * and `scopedEm` is the only way request and activity code gets an EntityManager for business
 * data, so no handler has to remember the condition. A scoped query without scope parameters fails.
 * The one read outside the ORM, `readScopedById`, takes the scope as an argument and always applies it.
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
 * One record by id within `scope`, for hot reads that only present the record: a named prepared
 * statement on the ORM's own pool, built from the entity's metadata, and the row mapped to the
 * entity's properties (with their types' conversions) as a plain, read-only object. No
 * EntityManager is involved (forking one costs more than the read): to change a record, load it
 * through `scopedEm` instead.
 */
export async function readScopedById<T extends object>(orm: MikroORM, scope: Scope, entity: EntityName<T>, id: string): Promise<Readonly<T> | null> {
  const reader = rowReader(orm.em, entity);
  const pool = await orm.em.getConnection().getNativeClient();
  const { rows } = await pool.query({ name: reader.statement, text: reader.sql, values: [id, scope.accountId, scope.livemode] });
  return rows[0] ? (reader.map(rows[0]) as T) : null;
}

/** `readScopedById`, or 404 `not_found` naming the record (`what`: 'customer', 'plan' …). */
export async function readScopedOr404<T extends object>(orm: MikroORM, scope: Scope, entity: EntityName<T>, id: string, what: string): Promise<Readonly<T>> {
  const record = await readScopedById(orm, scope, entity, id);
  if (!record) throw notFound(what, id);
  return record;
}

interface RowReader {
  statement: string;
  sql: string;
  map(row: Record<string, unknown>): object;
}

const readers = new WeakMap<object, RowReader>();

/** The by-id statement and the row-to-properties mapping of a scoped entity, built once. */
function rowReader<T extends object>(em: EntityManager, entity: EntityName<T>): RowReader {
  const meta = em.getMetadata().get(entity);
  let reader = readers.get(meta);
  if (reader) return reader;
  const platform = em.getPlatform();
  const columns = meta.props.map((prop) => {
    if (prop.kind !== 'scalar') throw new Error(`readScopedById reads scalar properties only; ${meta.className}.${prop.name} is a relation`);
    // As the ORM's hydrator does: custom types convert, dates arrive as text from the ORM's pool.
    const convert: (value: unknown) => unknown = prop.customType
      ? (value) => prop.customType!.convertToJSValue(value, platform)
      : prop.runtimeType === 'Date' ? (value) => (value instanceof Date ? value : new Date(value as string)) : (value) => value;
    return { name: prop.name, field: prop.fieldNames[0]!, convert };
  });
  const field = (name: string) => columns.find((c) => c.name === name)!.field;
  reader = {
    statement: `scoped-by-id:${meta.tableName}`,
    sql: `select ${columns.map((c) => `"${c.field}"`).join(', ')} from "${meta.tableName}"
           where "${field('id')}" = $1 and "${field('accountId')}" = $2 and "${field('livemode')}" = $3 limit 1`,
    map(row) {
      const out: Record<string, unknown> = {};
      for (const c of columns) {
        const value = row[c.field];
        out[c.name] = value == null ? value : c.convert(value);
      }
      return Object.freeze(out);
    },
  };
  readers.set(meta, reader);
  return reader;
}

/**
 * The newest `perParent` records of each parent (a customer's last orders, an order's shipments)
 * for many parents in one statement, within the EntityManager's scope: a `row_number()` over the
 * parent column, so a nested list read for N parents costs one query, not N, and no parent's
 * many rows crowd out another's. `filters` are equality sets on scalar properties (`status`),
 * applied before the ranking. Used by the areas' "of many customers/orders" reads (GraphQL's
 * batch loaders); rows are hydrated as the entity (`em.map`), newest id first.
 */
export async function findNewestPerParent<T extends object>(
  em: EntityManager, entity: EntityName<T>, parent: string, parentIds: readonly string[],
  perParent: number, filters: Record<string, readonly string[] | undefined> = {},
): Promise<T[]> {
  if (!parentIds.length) return [];
  const meta = em.getMetadata().get(entity);
  const column = (prop: string) => {
    const field = (meta.properties as Record<string, { fieldNames?: string[] } | undefined>)[prop]?.fieldNames?.[0];
    if (!field) throw new Error(`findNewestPerParent: ${meta.className} has no column for ${prop}`);
    return `"${field}"`;
  };
  const scope = em.getFilterParams<Scope>(SCOPE_FILTER);
  if (!scope?.accountId) throw new Error('findNewestPerParent needs a scoped EntityManager (scopedEm)');
  const conditions = [`${column('accountId')} = ?`, `${column('livemode')} = ?`, `${column(parent)} in (?)`];
  const values: unknown[] = [scope.accountId, scope.livemode, [...new Set(parentIds)]];
  for (const [prop, allowed] of Object.entries(filters)) {
    if (!allowed) continue;
    if (!allowed.length) return [];
    conditions.push(`${column(prop)} in (?)`);
    values.push([...allowed]);
  }
  const rows = await em.getConnection().execute<Record<string, unknown>[]>(
    `select * from (select t.*, row_number() over (partition by t.${column(parent)} order by t.${column('id')} desc) as bp_rank
       from "${meta.tableName}" t where ${conditions.join(' and ')}) ranked where bp_rank <= ? order by ${column('id')} desc`,
    [...values, perParent],
  );
  return rows.map(({ bp_rank: _rank, ...row }) => em.map(entity, row as never));
}
