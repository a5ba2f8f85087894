import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, notFound, validationFailed } from '../../platform/errors.ts';
import type { Scope } from '../scope.ts';
import type { InventoryItemView, StockMovementView, WarehouseInventoryView } from './schemas.ts';

/**
 * Reads of a warehouse's stock (the commerce area's `inventory_levels`, extended with `in_transit`)
 * and of the movements ledger. Alerts are derived from the levels, so there is exactly one per SKU
 * and warehouse and it closes the moment the level recovers: `out_of_stock` (available ≤ 0), else
 * `below_safety_stock` (available < safety stock), else `low_stock` (available ≤ reorder point).
 */

export const iso = (column: string): string => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const AVAILABLE = '(quantity - reserved)';
const ALERT_CASE = `case when ${AVAILABLE} <= 0 then 'out_of_stock' when ${AVAILABLE} < safety_stock then 'below_safety_stock'
  when ${AVAILABLE} <= reorder_point then 'low_stock' end`;
const ALERT_RANK = `case when ${AVAILABLE} <= 0 then 0 when ${AVAILABLE} < safety_stock then 1 else 2 end`;
export const MAX_ALERTS = 100;

/** An opaque cursor over a text key (SKUs, ledger positions). */
export function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined, path = 'cursor'): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof decoded.after === 'string') return decoded.after;
  } catch {
    // reported below
  }
  throw validationFailed([{ path, message: 'not a cursor from this list; pass next_cursor unchanged' }]);
}

/** 404 unless the warehouse exists in the scope. */
export async function requireWarehouse(em: EntityManager, scope: Scope, warehouseId: string, path?: string): Promise<void> {
  const rows = await em.execute('select 1 from warehouses where account_id = ? and livemode = ? and id = ?', [scope.accountId, scope.livemode, warehouseId]);
  if (rows.length) return;
  if (path) throw validationFailed([{ path, message: `no warehouse '${warehouseId}' in this account and mode; create it with POST /v3/warehouses` }]);
  throw notFound('warehouse', warehouseId);
}

interface ItemRow {
  sku: string;
  quantity: number;
  reserved: number;
  in_transit: number;
  safety_stock: number;
  reorder_point: number;
  location: string | null;
  last_updated: string;
}

const ITEM_COLUMNS = `sku, quantity, reserved, in_transit, safety_stock, reorder_point, location, ${iso('updated_at')} as last_updated`;

export function itemView(r: ItemRow): InventoryItemView {
  return {
    sku: r.sku, quantity: r.quantity, reserved: r.reserved, available: r.quantity - r.reserved, in_transit: r.in_transit,
    safety_stock: r.safety_stock, reorder_point: r.reorder_point, location: r.location, last_updated: r.last_updated,
  };
}

export interface InventoryQuery {
  limit: number;
  cursor?: string;
  sku_prefix?: string;
  below_reorder?: boolean;
}

/** `GET /v3/warehouses/{id}/inventory`: a page of levels in SKU order, and the warehouse's open alerts. */
export async function getWarehouseInventory(em: EntityManager, scope: Scope, warehouseId: string, q: InventoryQuery): Promise<WarehouseInventoryView> {
  await requireWarehouse(em, scope, warehouseId);
  const after = decodeCursor(q.cursor);
  const prefix = q.sku_prefix ?? '';
  // left(sku, n) = prefix: the prefix is matched literally (no LIKE wildcards).
  const where = `account_id = ? and livemode = ? and warehouse_id = ? and left(sku, ?) = ?`;
  const args = [scope.accountId, scope.livemode, warehouseId, prefix.length, prefix];
  const rows = await em.execute<ItemRow[]>(
    `select ${ITEM_COLUMNS} from inventory_levels where ${where}
       ${q.below_reorder ? `and ${AVAILABLE} <= reorder_point` : ''} ${after !== undefined ? 'and sku > ?' : ''}
      order by sku limit ?`,
    [...args, ...(after !== undefined ? [after] : []), q.limit + 1],
  );
  const alerts = await em.execute<{ type: 'out_of_stock' | 'below_safety_stock' | 'low_stock'; sku: string; current_stock: number; reorder_point: number; safety_stock: number; last_updated: string }[]>(
    `select ${ALERT_CASE} as type, sku, ${AVAILABLE} as current_stock, reorder_point, safety_stock, ${iso('updated_at')} as last_updated
       from inventory_levels where ${where} and (${AVAILABLE} <= reorder_point or ${AVAILABLE} < safety_stock or ${AVAILABLE} <= 0)
      order by ${ALERT_RANK}, sku limit ${MAX_ALERTS}`,
    args,
  );
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  return {
    object: 'warehouse_inventory', warehouse_id: warehouseId, livemode: scope.livemode,
    inventory: page.map(itemView), alerts,
    has_more: hasMore, next_cursor: hasMore ? encodeCursor(page.at(-1)!.sku) : null,
  };
}

/** One level (the answer of the settings PATCH). */
export async function getInventoryItem(em: EntityManager, scope: Scope, warehouseId: string, sku: string): Promise<InventoryItemView | null> {
  const rows = await em.execute<ItemRow[]>(
    `select ${ITEM_COLUMNS} from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ? and sku = ?`,
    [scope.accountId, scope.livemode, warehouseId, sku],
  );
  return rows[0] ? itemView(rows[0]) : null;
}

interface MovementRow {
  id: string;
  seq: string | null;
  warehouse_id: string;
  sku: string;
  quantity_before: number;
  quantity_after: number;
  reserved_before: number;
  reserved_after: number;
  in_transit_before: number;
  in_transit_after: number;
  reason: string;
  reference: string | null;
  actor: string | null;
  request_id: string | null;
  created_at: string;
}

export const MOVEMENT_COLUMNS = `id, seq, warehouse_id, sku, quantity_before, quantity_after, reserved_before, reserved_after,
  in_transit_before, in_transit_after, reason, reference, actor, request_id, ${iso('created_at')} as created_at`;

export function movementView(r: MovementRow, livemode: boolean): StockMovementView {
  return {
    object: 'stock_movement', id: `mov_${r.id}`, seq: r.seq === null ? null : Number(r.seq), livemode,
    warehouse_id: r.warehouse_id, sku: r.sku, quantity_before: r.quantity_before, quantity_after: r.quantity_after,
    reserved_before: r.reserved_before, reserved_after: r.reserved_after, in_transit_before: r.in_transit_before,
    in_transit_after: r.in_transit_after, reason: r.reason, reference: r.reference, actor: r.actor, request_id: r.request_id,
    created_at: r.created_at,
  };
}

export interface MovementQuery {
  limit: number;
  cursor?: string;
  sku?: string;
  reason?: string;
}

/** The ledger of one warehouse, newest first. */
export async function listMovements(em: EntityManager, scope: Scope, warehouseId: string, q: MovementQuery) {
  await requireWarehouse(em, scope, warehouseId);
  const after = decodeCursor(q.cursor);
  if (after !== undefined && !/^\d{1,18}$/.test(after)) throw validationFailed([{ path: 'cursor', message: 'not a cursor from this list; pass next_cursor unchanged' }]);
  const conditions = ['account_id = ?', 'livemode = ?', 'warehouse_id = ?'];
  const args: unknown[] = [scope.accountId, scope.livemode, warehouseId];
  if (q.sku !== undefined) {
    conditions.push('sku = ?');
    args.push(q.sku);
  }
  if (q.reason !== undefined) {
    conditions.push('reason = ?');
    args.push(q.reason);
  }
  if (after !== undefined) {
    conditions.push('id < ?');
    args.push(after);
  }
  const rows = await em.execute<MovementRow[]>(
    `select ${MOVEMENT_COLUMNS} from stock_movements where ${conditions.join(' and ')} order by id desc limit ?`, [...args, q.limit + 1]);
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  return {
    object: 'list' as const, data: page.map((r) => movementView(r, scope.livemode)), has_more: hasMore,
    next_cursor: hasMore ? encodeCursor(String(page.at(-1)!.id)) : null, url: `/v3/warehouses/${warehouseId}/movements`,
  };
}

/** SKUs of `skus` with no product in the scope. */
export async function unknownSkus(em: EntityManager, scope: Scope, skus: string[]): Promise<string[]> {
  if (!skus.length) return [];
  const rows = await em.execute<{ sku: string }[]>(
    'select distinct sku from products where account_id = ? and livemode = ? and sku in (select jsonb_array_elements_text(?::jsonb))',
    [scope.accountId, scope.livemode, JSON.stringify(skus)],
  );
  const known = new Set(rows.map((r) => r.sku));
  return skus.filter((s) => !known.has(s));
}

/** `test_clock_time` drives a transfer's or a count's deadline in the sandbox only (403 `test_mode_only` with a live key). */
export function sandboxClockOnly(scope: Scope, testClockTime: Date | undefined): number | null {
  if (!testClockTime) return null;
  if (scope.livemode) {
    throw new ApiError({
      status: 403, code: 'test_mode_only', title: 'Forbidden', detail: 'test_clock_time drives a deadline in the sandbox only.',
      suggestion: 'Use a test key (bp_test_…), or omit test_clock_time.',
    });
  }
  return testClockTime.getTime();
}
