import type { EntityManager } from '@mikro-orm/postgresql';
import type { Statement } from '../../db/pool.ts';
import { ApiError, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import type { Scope } from '../scope.ts';
import type { Allocation } from './entities.ts';
import type { InventoryLevelView } from './schemas.ts';
import { isoUtc } from './sql.ts';

/**
 * Stock per (warehouse, SKU): `quantity` on hand, `reserved` for open orders, `available` =
 * quantity − reserved. Every change is made in SQL that cannot take available stock below zero:
 *
 * - order reservations are one conditional UPDATE per warehouse row
 *   (`set reserved = reserved + q where quantity - reserved >= q`), so concurrent orders never
 *   oversell;
 * - stock operations (set / add / subtract, one item or a batch of up to 1,000) lock their rows
 *   (`select … for update`, in warehouse, SKU order so two batches cannot deadlock), apply every
 *   operation in order and write all rows in one UPDATE, in one transaction: all or nothing.
 *
 * The table's CHECK constraints (quantity ≥ 0, 0 ≤ reserved ≤ quantity) back both up.
 * `inventory.low_stock` is recorded when a change takes available stock from above the row's
 * reorder point to at or below it.
 */

export const STOCK_OPERATIONS = ['set', 'add', 'subtract'] as const;
export type StockOperation = (typeof STOCK_OPERATIONS)[number];
export const MAX_BULK_ITEMS = 1000;
/** Most units one (warehouse, SKU) row may hold: keeps every sum inside a PostgreSQL integer. */
export const MAX_STOCK = 1_000_000_000;

export interface StockChange {
  sku: string;
  warehouse_id: string;
  quantity: number;
  operation: StockOperation;
  reorder_point?: number;
  safety_stock?: number;
  location?: string;
}

export type { InventoryLevelView } from './schemas.ts';

/**
 * Who and why, for the stock movements ledger: every change of `inventory_levels` is recorded by a
 * trigger (migration 0030) with the context set here, transaction-local. Set it before the change.
 */
export interface StockContext {
  /** `stock_update`, `order_reservation`, `transfer_dispatch`, `cycle_count`, … */
  reason: string;
  /** The business object behind the change (an order, a transfer, a count). */
  reference?: string | null;
  /** Who made it: `key:<api key id>`, `admin:<operator>`, `workflow:<id>`. */
  actor?: string | null;
  requestId?: string | null;
}

export async function setStockContext(tx: EntityManager, ctx: StockContext): Promise<void> {
  const { sql, params } = stockContextStatement(ctx);
  await tx.execute(sql, params);
}

/** `setStockContext`'s statement, to run with others (`inOneTransaction`). */
export function stockContextStatement(ctx: StockContext): Statement {
  return {
    sql: `select set_config('bp.stock_reason', ?, true), set_config('bp.stock_reference', ?, true),
                 set_config('bp.stock_actor', ?, true), set_config('bp.stock_request', ?, true)`,
    params: [ctx.reason, ctx.reference ?? '', ctx.actor ?? '', ctx.requestId ?? ''],
  };
}

interface LevelRow {
  warehouse_id: string;
  sku: string;
  quantity: number;
  reserved: number;
  safety_stock: number;
  reorder_point: number;
  location: string | null;
  last_updated: string;
}

/** The columns of a LevelRow, optionally qualified by a table alias. */
function levelColumns(alias?: string): string {
  const c = (name: string) => (alias ? `${alias}.${name}` : name);
  return `${['warehouse_id', 'sku', 'quantity', 'reserved', 'safety_stock', 'reorder_point', 'location'].map(c).join(', ')}, ${isoUtc(c('updated_at'))} as last_updated`;
}
const LEVEL_COLUMNS = levelColumns();

function levelView(r: LevelRow): InventoryLevelView {
  return {
    object: 'inventory_level', sku: r.sku, warehouse_id: r.warehouse_id, quantity: r.quantity, reserved: r.reserved,
    available: r.quantity - r.reserved, safety_stock: r.safety_stock, reorder_point: r.reorder_point,
    location: r.location, last_updated: r.last_updated,
  };
}

const levelKey = (warehouseId: string, sku: string) => `${warehouseId}\u0000${sku}`;

/** Stock of one SKU in every warehouse that holds a row for it. */
export async function getStock(em: EntityManager, scope: Scope, sku: string): Promise<InventoryLevelView[]> {
  const levels = await stockOfSkus(em, scope, [sku]);
  if (!levels.length && !(await skuExists(em, scope, sku))) throw notFound('SKU', sku);
  return levels;
}

/** Stock of many SKUs in every warehouse, in one statement (by SKU, then warehouse): GraphQL's `Product.stock`. */
export async function stockOfSkus(em: EntityManager, scope: Scope, skus: readonly string[]): Promise<InventoryLevelView[]> {
  if (!skus.length) return [];
  const rows = await em.execute<LevelRow[]>(
    `select ${LEVEL_COLUMNS} from inventory_levels where account_id = ? and livemode = ? and sku in (?) order by sku, warehouse_id`,
    [scope.accountId, scope.livemode, [...new Set(skus)]],
  );
  return rows.map(levelView);
}

/**
 * Levels at or below their reorder point or safety stock (available = quantity − reserved), the
 * fewest available first: what is about to run out. Read-only (the /v3/ai `list_low_stock` tool).
 */
export async function lowStockLevels(em: EntityManager, scope: Scope, limit: number): Promise<InventoryLevelView[]> {
  const rows = await em.execute<LevelRow[]>(
    `select ${LEVEL_COLUMNS} from inventory_levels
      where account_id = ? and livemode = ? and quantity - reserved <= greatest(reorder_point, safety_stock)
      order by quantity - reserved, sku, warehouse_id limit ?`,
    [scope.accountId, scope.livemode, limit],
  );
  return rows.map(levelView);
}

async function skuExists(em: EntityManager, scope: Scope, sku: string): Promise<boolean> {
  const rows = await em.execute('select 1 from products where account_id = ? and livemode = ? and sku = ? limit 1', [scope.accountId, scope.livemode, sku]);
  return rows.length > 0;
}

/**
 * Records `inventory.low_stock` (data.object: the inventory level after the change) when available
 * stock crossed the reorder point downwards.
 */
export function noteLowStock(
  em: EntityManager, scope: Scope, after: LevelRow, before: { available: number; reorder_point: number }, requestId: string | null,
): void {
  const available = after.quantity - after.reserved;
  if (!(before.available > before.reorder_point && available <= after.reorder_point)) return;
  recordEvent(em, scope, { type: 'inventory.low_stock', object: { ...levelView(after), livemode: scope.livemode }, requestId });
}

/**
 * Applies stock operations atomically: either every item applies or none does. Every bad item is
 * reported in one answer: 409 `insufficient_stock` when the only problem is stock (an operation
 * would take available stock below zero), else 422 `validation_failed` listing unknown SKUs or
 * warehouses together with any stock problems. `path(i, field)` names an
 * item's field in the error (`quantity` for the single-item endpoint, `items.3.quantity` in a batch).
 */
export async function applyStockChanges(
  em: EntityManager, scope: Scope, changes: StockChange[], requestId: string | null,
  path: (index: number, field: string) => string, context: StockContext = { reason: 'stock_update' },
): Promise<InventoryLevelView[]> {
  return em.transactional(async (tx) => {
    await setStockContext(tx, { requestId, ...context });
    const skus = [...new Set(changes.map((c) => c.sku))];
    const warehouseIds = [...new Set(changes.map((c) => c.warehouse_id))];
    // One statement at a time: they share the transaction's connection.
    const knownSkus = await tx.execute<{ sku: string; reorder_point: number; safety_stock: number }[]>(
      `select sku, max(reorder_point) as reorder_point, max(safety_stock) as safety_stock from products
        where account_id = ? and livemode = ? and sku in (select jsonb_array_elements_text(?::jsonb)) group by sku`,
      [scope.accountId, scope.livemode, JSON.stringify(skus)],
    );
    const knownWarehouses = await tx.execute<{ id: string }[]>(
      'select id from warehouses where account_id = ? and livemode = ? and id in (select jsonb_array_elements_text(?::jsonb))',
      [scope.accountId, scope.livemode, JSON.stringify(warehouseIds)],
    );
    const productDefaults = new Map(knownSkus.map((r) => [r.sku, r]));
    const warehouses = new Set(knownWarehouses.map((r) => r.id));
    // Items naming an unknown SKU or warehouse are reported; the others are still checked, so one
    // answer lists every bad item.
    const invalid: FieldError[] = [];
    const valid = changes.map((c, i) => {
      const okWarehouse = warehouses.has(c.warehouse_id);
      const okSku = productDefaults.has(c.sku);
      if (!okWarehouse) invalid.push({ path: path(i, 'warehouse_id'), message: `no warehouse '${c.warehouse_id}' in this account and mode; create it with POST /v3/warehouses` });
      if (!okSku) invalid.push({ path: path(i, 'sku'), message: `no product with SKU '${c.sku}' in any store of this account and mode` });
      return okWarehouse && okSku;
    });

    // Rows for new (warehouse, SKU) pairs start empty, with the product's reorder settings.
    const keys = [...new Map(changes.filter((_c, i) => valid[i]).map((c) => [levelKey(c.warehouse_id, c.sku), { w: c.warehouse_id, s: c.sku }])).values()];
    const keysJson = JSON.stringify(keys.map((k) => ({ ...k, rp: productDefaults.get(k.s)!.reorder_point, ss: productDefaults.get(k.s)!.safety_stock })));
    await tx.execute(
      `insert into inventory_levels (account_id, livemode, warehouse_id, sku, quantity, reserved, safety_stock, reorder_point, updated_at)
       select ?, ?, w, s, 0, 0, ss, rp, now() from jsonb_to_recordset(?::jsonb) as t(w text, s text, rp int, ss int)
       on conflict (account_id, livemode, warehouse_id, sku) do nothing`,
      [scope.accountId, scope.livemode, keysJson],
    );
    const locked = await tx.execute<LevelRow[]>(
      `select ${LEVEL_COLUMNS} from inventory_levels
        where account_id = ? and livemode = ?
          and (warehouse_id, sku) in (select w, s from jsonb_to_recordset(?::jsonb) as t(w text, s text))
        order by warehouse_id, sku for update`,
      [scope.accountId, scope.livemode, keysJson],
    );
    const before = new Map(locked.map((r) => [levelKey(r.warehouse_id, r.sku), r]));
    const after = new Map([...before].map(([k, r]) => [k, { ...r }]));

    const short: FieldError[] = [];
    const shortItems: { index: number; sku: string; warehouse_id: string; requested: number; available: number; operation: StockOperation }[] = [];
    changes.forEach((c, i) => {
      if (!valid[i]) return;
      const row = after.get(levelKey(c.warehouse_id, c.sku))!;
      const available = row.quantity - row.reserved;
      if (c.operation === 'add') {
        if (row.quantity + c.quantity > MAX_STOCK) {
          invalid.push({ path: path(i, 'quantity'), message: `adding ${c.quantity} would take '${c.sku}' in ${c.warehouse_id} above the ${MAX_STOCK} units a stock row holds` });
        } else row.quantity += c.quantity;
      } else if (c.operation === 'subtract') {
        if (c.quantity > available) {
          short.push({ path: path(i, 'quantity'), message: `subtracting ${c.quantity} of '${c.sku}' in ${c.warehouse_id} would take available stock below zero (available: ${available})` });
          shortItems.push({ index: i, sku: c.sku, warehouse_id: c.warehouse_id, requested: c.quantity, available, operation: c.operation });
        } else row.quantity -= c.quantity;
      } else if (c.quantity < row.reserved) {
        short.push({ path: path(i, 'quantity'), message: `setting '${c.sku}' in ${c.warehouse_id} to ${c.quantity} is below the ${row.reserved} units reserved for open orders` });
        shortItems.push({ index: i, sku: c.sku, warehouse_id: c.warehouse_id, requested: c.quantity, available: row.reserved, operation: c.operation });
      } else row.quantity = c.quantity;
      if (c.reorder_point !== undefined) row.reorder_point = c.reorder_point;
      if (c.safety_stock !== undefined) row.safety_stock = c.safety_stock;
      if (c.location !== undefined) row.location = c.location;
    });
    if (invalid.length) {
      const all = [...invalid, ...short];
      throw validationFailed(all, `${all.length} item field${all.length === 1 ? ' is' : 's are'} invalid (unknown SKUs or warehouses${short.length ? ', insufficient stock' : ''}); nothing was changed.`);
    }
    if (short.length) {
      throw new ApiError({
        status: 409, code: 'insufficient_stock', title: 'Conflict',
        detail: `${short.length} operation${short.length === 1 ? '' : 's'} would take available stock below zero; nothing was changed.`,
        suggestion: 'Lower the quantities listed in `errors` (or add stock first) and send the request again.',
        errors: short,
        extensions: { items: shortItems },
      });
    }

    const rows = [...after.values()];
    const updated = await tx.execute<LevelRow[]>(
      `update inventory_levels l set quantity = t.quantity, reorder_point = t.reorder_point, safety_stock = t.safety_stock,
              location = t.location, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as t(warehouse_id text, sku text, quantity int, reorder_point int, safety_stock int, location text)
        where l.account_id = ? and l.livemode = ? and l.warehouse_id = t.warehouse_id and l.sku = t.sku
        returning ${levelColumns('l')}`,
      [JSON.stringify(rows), scope.accountId, scope.livemode],
    );
    for (const row of updated) {
      const old = before.get(levelKey(row.warehouse_id, row.sku))!;
      noteLowStock(tx, scope, row, { available: old.quantity - old.reserved, reorder_point: old.reorder_point }, requestId);
    }
    await tx.flush();
    const byKey = new Map(updated.map((r) => [levelKey(r.warehouse_id, r.sku), levelView(r)]));
    return keys.map((k) => byKey.get(levelKey(k.w, k.s))!);
  });
}

/**
 * Reserves `quantity` units of `sku` for an order, taking from warehouses in id order (a line may
 * be split across warehouses). Each step is one conditional UPDATE that only succeeds while the row
 * still has the units, so concurrent orders never oversell; if another order took them first, the
 * candidates are read again. Runs inside the order's transaction: a shortfall throws, and the
 * rollback releases what earlier steps reserved.
 */
export async function reserveStock(
  tx: EntityManager, scope: Scope, sku: string, quantity: number, requestId: string | null,
): Promise<Allocation[]> {
  // The common case in one statement: the first warehouse (by id) holding every unit. The UPDATE
  // re-checks the condition on the row it locks, so a concurrent order that took the units first
  // makes it match nothing, and the general path below runs.
  const whole = await tx.execute<LevelRow[]>(
    `with pick as (
       select warehouse_id from inventory_levels
        where account_id = ? and livemode = ? and sku = ? and quantity - reserved >= ? order by warehouse_id limit 1)
     update inventory_levels l set reserved = l.reserved + ?, updated_at = now()
       from pick
      where l.account_id = ? and l.livemode = ? and l.sku = ? and l.warehouse_id = pick.warehouse_id and l.quantity - l.reserved >= ?
      returning ${levelColumns('l')}`,
    [scope.accountId, scope.livemode, sku, quantity, quantity, scope.accountId, scope.livemode, sku, quantity],
  );
  if (whole[0]) {
    noteLowStock(tx, scope, whole[0], { available: whole[0].quantity - whole[0].reserved + quantity, reorder_point: whole[0].reorder_point }, requestId);
    return [{ warehouse_id: whole[0].warehouse_id, quantity }];
  }

  const allocations: Allocation[] = [];
  let remaining = quantity;
  for (let round = 0; remaining > 0 && round < 10; round++) {
    const candidates = await tx.execute<{ warehouse_id: string; available: number }[]>(
      `select warehouse_id, quantity - reserved as available from inventory_levels
        where account_id = ? and livemode = ? and sku = ? and quantity > reserved order by warehouse_id`,
      [scope.accountId, scope.livemode, sku],
    );
    if (!candidates.length) break;
    let raced = false;
    for (const c of candidates) {
      if (remaining === 0) break;
      const take = Math.min(remaining, c.available);
      if (!(await reserveAt(tx, scope, c.warehouse_id, sku, take, requestId))) {
        raced = true;
        continue;
      }
      remaining -= take;
      const existing = allocations.find((a) => a.warehouse_id === c.warehouse_id);
      if (existing) existing.quantity += take;
      else allocations.push({ warehouse_id: c.warehouse_id, quantity: take });
    }
    if (!raced) break;
  }
  if (remaining > 0) {
    throw new ApiError({
      status: 409, code: 'insufficient_stock', title: 'Conflict',
      detail: `Not enough stock of '${sku}': ${quantity} requested, ${quantity - remaining} available.`,
      suggestion: 'Order fewer units, or add stock with PUT /v3/inventory/{sku}/stock and try again.',
      extensions: { sku, requested: quantity, available: quantity - remaining },
    });
  }
  return allocations;
}

/**
 * Reserves `quantity` units of `sku` in one warehouse: one conditional UPDATE that locks the row
 * and only succeeds while it still has the units. False (nothing changed) when it has not. The
 * same statement as `plannedReservation`, answering instead of failing.
 */
export async function reserveAt(
  tx: EntityManager, scope: Scope, warehouseId: string, sku: string, quantity: number, requestId: string | null,
): Promise<boolean> {
  const { sql, params } = reservation(scope, warehouseId, sku, quantity, requestId, 'answer');
  const [row] = await tx.execute<{ reserved: boolean }[]>(sql, params);
  return row!.reserved;
}

/**
 * For each SKU, the first warehouse (by id) that holds all of `quantities[sku]` units now, read
 * without locking anything; null when some SKU has no such warehouse (its units are split across
 * warehouses, or short). What an order plans here it reserves later (`plannedReservation`), which
 * re-checks the units on the row it locks.
 */
export async function wholeWarehouses(em: EntityManager, scope: Scope, quantities: ReadonlyMap<string, number>): Promise<Map<string, string> | null> {
  if (!quantities.size) return new Map();
  // One index probe per SKU (inventory_levels_sku), however many SKUs the account stocks.
  const rows = await em.execute<{ sku: string; warehouse_id: string | null }[]>(
    `select t.sku, (select l.warehouse_id from inventory_levels l
                     where l.account_id = ? and l.livemode = ? and l.sku = t.sku and l.quantity - l.reserved >= t.quantity
                     order by l.warehouse_id limit 1) as warehouse_id
       from jsonb_to_recordset(?::jsonb) as t(sku text, quantity int)`,
    [scope.accountId, scope.livemode, JSON.stringify([...quantities].map(([sku, quantity]) => ({ sku, quantity })))],
  );
  return rows.every((r) => r.warehouse_id !== null) ? new Map(rows.map((r) => [r.sku, r.warehouse_id!])) : null;
}

/** What `plannedReservation` fails with when the row no longer holds the units (bp_assert's code). */
export const PLAN_OVERTAKEN = 'plan_overtaken';

/**
 * The statement that reserves `quantity` units of `sku` in `warehouseId` as planned, for a write
 * in one round trip (`inOneTransaction`): like `reserveAt`, it re-checks the units on the row it
 * locks, and when they are no longer there it fails with `PLAN_OVERTAKEN`, rolling back everything
 * written with it.
 */
export function plannedReservation(scope: Scope, warehouseId: string, sku: string, quantity: number, requestId: string | null): Statement {
  return reservation(scope, warehouseId, sku, quantity, requestId, 'fail');
}

/**
 * One conditional reservation (the row's units re-checked under its lock). A row whose available
 * stock crosses its reorder point downwards gets its `inventory.low_stock` in the same statement,
 * with the object `noteLowStock` records. `onShort`: fail (`bp_assert`, PLAN_OVERTAKEN) or answer
 * `reserved: false`.
 */
function reservation(
  scope: Scope, warehouseId: string, sku: string, quantity: number, requestId: string | null, onShort: 'fail' | 'answer',
): Statement {
  return {
    sql: `with reserved as (
            update inventory_levels set reserved = reserved + ?, updated_at = now()
             where account_id = ? and livemode = ? and warehouse_id = ? and sku = ? and quantity - reserved >= ?
            returning ${LEVEL_COLUMNS}
          ), low_stock as (
            insert into events (id, account_id, livemode, type, data, customer_id, request_id, dispatched_at, customer_metrics, synthetic, created_at)
            select ?, ?, ?, 'inventory.low_stock', jsonb_build_object('object', jsonb_build_object(
                     'object', 'inventory_level', 'sku', r.sku, 'warehouse_id', r.warehouse_id, 'quantity', r.quantity,
                     'reserved', r.reserved, 'available', r.quantity - r.reserved, 'safety_stock', r.safety_stock,
                     'reorder_point', r.reorder_point, 'location', r.location, 'last_updated', r.last_updated, 'livemode', ?::boolean)),
                   null, ?, null, null, false, now()
              from reserved r
             where r.quantity - r.reserved + ? > r.reorder_point and r.quantity - r.reserved <= r.reorder_point
          )
          select ${onShort === 'fail' ? 'bp_assert(exists (select from reserved), ?)' : 'exists (select from reserved) as reserved'}`,
    params: [
      quantity, scope.accountId, scope.livemode, warehouseId, sku, quantity,
      newId('event'), scope.accountId, scope.livemode, scope.livemode, requestId, quantity,
      ...(onShort === 'fail' ? [PLAN_OVERTAKEN] : []),
    ],
  };
}

/** Gives reserved units back (order canceled). */
export async function releaseStock(tx: EntityManager, scope: Scope, sku: string, allocations: Allocation[]): Promise<void> {
  if (!allocations.length) return;
  await tx.execute(
    `update inventory_levels l set reserved = l.reserved - t.quantity, updated_at = now()
       from jsonb_to_recordset(?::jsonb) as t(warehouse_id text, quantity int)
      where l.account_id = ? and l.livemode = ? and l.sku = ? and l.warehouse_id = t.warehouse_id`,
    [JSON.stringify(allocations), scope.accountId, scope.livemode, sku],
  );
}

/** Reserved units leave the warehouse (order fulfilled): on-hand and reserved both drop. */
export async function consumeStock(tx: EntityManager, scope: Scope, sku: string, allocations: Allocation[]): Promise<void> {
  if (!allocations.length) return;
  await tx.execute(
    `update inventory_levels l set quantity = l.quantity - t.quantity, reserved = l.reserved - t.quantity, updated_at = now()
       from jsonb_to_recordset(?::jsonb) as t(warehouse_id text, quantity int)
      where l.account_id = ? and l.livemode = ? and l.sku = ? and l.warehouse_id = t.warehouse_id`,
    [JSON.stringify(allocations), scope.accountId, scope.livemode, sku],
  );
}

/** A change of one (warehouse, SKU) row: units added to (positive) or taken from (negative) each column. */
export interface StockDelta {
  warehouse_id: string;
  sku: string;
  quantity?: number;
  reserved?: number;
  in_transit?: number;
}

export interface MovedLevel extends InventoryLevelView {
  in_transit: number;
}

/**
 * Applies signed deltas to on-hand, reserved and in-transit stock, atomically (all or nothing), for
 * the warehouses area's movements (transfers, receipts, cycle-count adjustments). Rows are locked in
 * (warehouse, SKU) order, so two movements cannot deadlock; a delta that would take on-hand or
 * in-transit below zero, reserved below zero or above on-hand, is refused with 409
 * `insufficient_stock` listing every short item. The ledger records each row with `context`.
 * Callers check that the SKUs and warehouses exist in the scope.
 */
export async function moveStock(em: EntityManager, scope: Scope, deltas: StockDelta[], context: StockContext): Promise<MovedLevel[]> {
  if (!deltas.length) return [];
  return em.transactional(async (tx) => {
    await setStockContext(tx, context);
    const merged = new Map<string, Required<StockDelta>>();
    for (const d of deltas) {
      const k = levelKey(d.warehouse_id, d.sku);
      const m = merged.get(k) ?? { warehouse_id: d.warehouse_id, sku: d.sku, quantity: 0, reserved: 0, in_transit: 0 };
      m.quantity += d.quantity ?? 0;
      m.reserved += d.reserved ?? 0;
      m.in_transit += d.in_transit ?? 0;
      merged.set(k, m);
    }
    const rows = [...merged.values()].sort((a, b) => (levelKey(a.warehouse_id, a.sku) < levelKey(b.warehouse_id, b.sku) ? -1 : 1));
    const json = JSON.stringify(rows);
    await tx.execute(
      `insert into inventory_levels (account_id, livemode, warehouse_id, sku, quantity, reserved, safety_stock, reorder_point, updated_at)
       select ?, ?, t.warehouse_id, t.sku, 0, 0, coalesce(p.ss, 0), coalesce(p.rp, 0), now()
         from jsonb_to_recordset(?::jsonb) as t(warehouse_id text, sku text)
         left join lateral (select max(safety_stock) as ss, max(reorder_point) as rp from products
                             where account_id = ? and livemode = ? and sku = t.sku) p on true
       on conflict (account_id, livemode, warehouse_id, sku) do nothing`,
      [scope.accountId, scope.livemode, json, scope.accountId, scope.livemode],
    );
    const locked = await tx.execute<(LevelRow & { in_transit: number })[]>(
      `select ${LEVEL_COLUMNS}, in_transit from inventory_levels
        where account_id = ? and livemode = ?
          and (warehouse_id, sku) in (select w, s from jsonb_to_recordset(?::jsonb) as t(w text, s text))
        order by warehouse_id, sku for update`,
      [scope.accountId, scope.livemode, JSON.stringify(rows.map((r) => ({ w: r.warehouse_id, s: r.sku })))],
    );
    const before = new Map(locked.map((r) => [levelKey(r.warehouse_id, r.sku), r]));
    const short: { sku: string; warehouse_id: string; quantity: number; reserved: number; in_transit: number; available: number }[] = [];
    const next = rows.map((d) => {
      const b = before.get(levelKey(d.warehouse_id, d.sku))!;
      const n = { warehouse_id: d.warehouse_id, sku: d.sku, quantity: b.quantity + d.quantity, reserved: b.reserved + d.reserved, in_transit: b.in_transit + d.in_transit };
      if (n.quantity < 0 || n.reserved < 0 || n.reserved > n.quantity || n.in_transit < 0 || n.quantity > MAX_STOCK || n.in_transit > MAX_STOCK) {
        short.push({ sku: d.sku, warehouse_id: d.warehouse_id, quantity: b.quantity, reserved: b.reserved, in_transit: b.in_transit, available: b.quantity - b.reserved });
      }
      return n;
    });
    if (short.length) {
      throw new ApiError({
        status: 409, code: 'insufficient_stock', title: 'Conflict',
        detail: `Not enough stock of ${short.map((s) => `'${s.sku}' in ${s.warehouse_id} (available ${s.available})`).join(', ')}; nothing was changed.`,
        suggestion: 'Lower the quantities of the SKUs listed in `items`, or add stock first, and send the request again.',
        extensions: { items: short },
      });
    }
    const updated = await tx.execute<(LevelRow & { in_transit: number })[]>(
      `update inventory_levels l set quantity = t.quantity, reserved = t.reserved, in_transit = t.in_transit, updated_at = now()
         from jsonb_to_recordset(?::jsonb) as t(warehouse_id text, sku text, quantity int, reserved int, in_transit int)
        where l.account_id = ? and l.livemode = ? and l.warehouse_id = t.warehouse_id and l.sku = t.sku
        returning ${levelColumns('l')}, l.in_transit`,
      [JSON.stringify(next), scope.accountId, scope.livemode],
    );
    for (const row of updated) {
      const old = before.get(levelKey(row.warehouse_id, row.sku))!;
      noteLowStock(tx, scope, row, { available: old.quantity - old.reserved, reorder_point: old.reorder_point }, context.requestId ?? null);
    }
    await tx.flush();
    return updated.map((r) => ({ ...levelView(r), in_transit: r.in_transit }));
  });
}
