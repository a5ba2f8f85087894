import { p } from '@mikro-orm/core';
import type { EntityManager, EntityName, MikroORM } from '@mikro-orm/postgresql';
import type { Statement } from '../db/pool.ts';
import { notFound } from '../platform/errors.ts';

/**
 * Every business record belongs to one account and one mode (live or test). The `scope` filter,
 * on by default for every scoped entity, adds `account_id = ? AND livemode = ?` to each query,
 * and `scopedEm` is the only way request and activity code gets an EntityManager for business
 * data, so no handler has to remember the condition. A scoped query without scope parameters fails.
 * The reads outside the ORM, `readScopedById` and `readScopedWhere`, take the scope as an argument and always apply it.
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

/** What the hot reads below run on: the ORM, or an EntityManager of it (only its pool and metadata are used). */
export type ReadSource = MikroORM | EntityManager;

/**
 * One record by id within `scope`, for hot reads that only present the record: a named prepared
 * statement on the ORM's own pool, built from the entity's metadata, and the row mapped to the
 * entity's properties (with their types' conversions) as a plain, read-only object. No
 * EntityManager is involved (forking one costs more than the read): to change a record, load it
 * through `scopedEm` instead.
 */
export async function readScopedById<T extends object>(db: ReadSource, scope: Scope, entity: EntityName<T>, id: string): Promise<Readonly<T> | null> {
  const [record] = await readScopedWhere(db, scope, entity, { id });
  return record ?? null;
}

/** `readScopedById`, or 404 `not_found` naming the record (`what`: 'customer', 'plan' …). */
export async function readScopedOr404<T extends object>(db: ReadSource, scope: Scope, entity: EntityName<T>, id: string, what: string): Promise<Readonly<T>> {
  const record = await readScopedById(db, scope, entity, id);
  if (!record) throw notFound(what, id);
  return record;
}

/**
 * The records within `scope` whose scalar properties equal `where`'s values (an array: any of
 * them), read like `readScopedById`: one named prepared statement per entity and shape of
 * `where`, no EntityManager. For the hot path's reads of records it only looks at (the store and
 * products an order is priced from); the values are compared as they are, without the
 * properties' type conversions, so `where` names plain text, number or boolean columns.
 */
export async function readScopedWhere<T extends object>(
  db: ReadSource, scope: Scope, entity: EntityName<T>, where: Record<string, string | number | boolean | readonly (string | number)[]>,
): Promise<Readonly<T>[]> {
  const em = 'fork' in db ? db : db.em;
  const reader = rowReader(em, entity);
  const names = Object.keys(where);
  const shape = names.map((name) => (Array.isArray(where[name]) ? `${name}[]` : name)).join(',');
  let statement = reader.statements.get(shape);
  if (!statement) {
    const conditions = names.map((name, i) => `"${reader.field(name)}" ${Array.isArray(where[name]) ? '= any' : '='}($${i + 3})`);
    statement = {
      name: `scoped:${reader.table}:${shape}`,
      text: `select ${reader.select} from "${reader.table}"
              where "${reader.field('accountId')}" = $1 and "${reader.field('livemode')}" = $2 and ${conditions.join(' and ')}`,
    };
    reader.statements.set(shape, statement);
  }
  const pool = await em.getConnection().getNativeClient();
  const { rows } = await pool.query({ ...statement, values: [scope.accountId, scope.livemode, ...names.map((name) => where[name])] });
  return rows.map((row) => reader.map(row) as T);
}

interface RowReader {
  table: string;
  /** The select list: every column of the entity. */
  select: string;
  /** A property's column; throws for a name the entity does not have. */
  field(name: string): string;
  /** The prepared statements made so far, by the shape of their `where`. */
  statements: Map<string, { name: string; text: string }>;
  map(row: Record<string, unknown>): object;
}

const readers = new WeakMap<object, RowReader>();

/** The columns and the row-to-properties mapping of a scoped entity, built once. */
function rowReader<T extends object>(em: EntityManager, entity: EntityName<T>): RowReader {
  const meta = em.getMetadata().get(entity);
  let reader = readers.get(meta);
  if (reader) return reader;
  const platform = em.getPlatform();
  const columns = meta.props.map((prop) => {
    if (prop.kind !== 'scalar') throw new Error(`readScopedWhere reads scalar properties only; ${meta.className}.${prop.name} is a relation`);
    // As the ORM's hydrator does: custom types convert, dates arrive as text from the ORM's pool.
    const convert: (value: unknown) => unknown = prop.customType
      ? (value) => prop.customType!.convertToJSValue(value, platform)
      : prop.runtimeType === 'Date' ? (value) => (value instanceof Date ? value : new Date(value as string)) : (value) => value;
    return { name: prop.name, field: prop.fieldNames[0]!, convert };
  });
  reader = {
    table: meta.tableName,
    select: columns.map((c) => `"${c.field}"`).join(', '),
    field(name) {
      const column = columns.find((c) => c.name === name);
      if (!column) throw new Error(`${meta.className} has no property ${name}`);
      return column.field;
    },
    statements: new Map(),
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

/** A new record of a scoped entity for `insertScoped`: its properties, without `accountId` and `livemode`. */
export interface NewRecord {
  entity: EntityName<any>;
  data: Record<string, unknown>;
}

/**
 * New records of scoped entities written in one statement (each insert a data-modifying CTE of
 * the last): one round trip where a flush makes one per table, and no unit of work. For the hot
 * path's records that are written whole and not changed again in the same transaction (an order
 * and its `order.created`). Each record's `accountId` and `livemode` are `scope`'s; a property
 * left out takes its `onCreate` value, 1 for a version, else the column's default; values convert
 * as the ORM converts them. Runs on `tx`'s connection, so inside its transaction when it has one.
 */
export async function insertScoped(tx: EntityManager, scope: Scope, records: readonly NewRecord[]): Promise<void> {
  if (!records.length) return;
  const { sql, params } = insertStatement(tx, scope, records);
  await tx.execute(sql, params);
}

/** `insertScoped`'s statement, to run with others (`inOneTransaction`). */
export function insertStatement(em: EntityManager, scope: Scope, records: readonly NewRecord[]): Statement {
  const platform = em.getPlatform();
  const params: unknown[] = [];
  const inserts = records.map(({ entity, data }) => {
    const meta = em.getMetadata().get(entity);
    const row: Record<string, unknown> = { ...data, accountId: scope.accountId, livemode: scope.livemode };
    const fields: string[] = [];
    for (const prop of meta.props) {
      if (prop.kind !== 'scalar' || prop.persist === false) continue;
      let value = row[prop.name];
      if (value === undefined) value = prop.onCreate ? prop.onCreate(row, em) : prop.version ? 1 : undefined;
      if (value === undefined) continue;
      if (value !== null && prop.customType) value = prop.customType.convertToDatabaseValue(value, platform, { mode: 'query' });
      fields.push(`"${prop.fieldNames[0]!}"`);
      params.push(value instanceof Date ? value.toISOString() : value);
    }
    return `insert into "${meta.tableName}" (${fields.join(', ')}) values (${fields.map(() => '?').join(', ')})`;
  });
  const last = inserts.pop()!;
  const ctes = inserts.map((sql, i) => `"w${i}" as (${sql})`);
  return { sql: ctes.length ? `with ${ctes.join(', ')} ${last}` : last, params };
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
