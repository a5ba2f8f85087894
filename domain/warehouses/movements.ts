import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed, type FieldError } from '../../platform/errors.ts';
import { moveStock, type MovedLevel } from '../commerce/public.ts';
import type { Scope } from '../scope.ts';
import { unknownSkus } from './inventory.ts';

/** One line of a stock movement: `quantity` units added to (positive) or removed from (negative) on-hand stock. */
export interface StockMovementLine {
  warehouseId: string;
  sku: string;
  quantity: number;
}

export interface StockMovementContext {
  /** Why: `procurement_receipt`, `return`, `scrap`, `manual_adjustment`, … (snake_case). */
  reason: string;
  /** The business object behind it (a purchase order, a receipt). */
  reference?: string | null;
  /** Who: `key:<id>`, `admin:<operator>`, `workflow:<id>`. */
  actor?: string | null;
  requestId?: string | null;
}

/**
 * Adds or removes on-hand stock through the movements ledger: every line in one transaction (all
 * or nothing; pass an EntityManager inside your own transaction to make it part of it), each
 * recorded in the ledger with `context`, broadcast on the realtime feed, and `inventory.low_stock`
 * recorded when a level crosses its reorder point. A removal may take only available units (on hand
 * minus reserved): otherwise 409 `insufficient_stock` listing the short lines. Unknown warehouses or
 * SKUs are 422 naming `lines.N.warehouse_id` / `lines.N.sku`.
 */
export async function recordStockMovement(
  em: EntityManager, scope: Scope, lines: StockMovementLine[], context: StockMovementContext,
): Promise<MovedLevel[]> {
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(context.reason)) {
    throw validationFailed([{ path: 'reason', message: 'a snake_case reason such as procurement_receipt' }]);
  }
  const errors: FieldError[] = [];
  lines.forEach((l, i) => {
    if (!Number.isSafeInteger(l.quantity) || l.quantity === 0) errors.push({ path: `lines.${i}.quantity`, message: 'a non-zero whole number of units' });
  });
  const warehouses = new Set((await em.execute<{ id: string }[]>(
    'select id from warehouses where account_id = ? and livemode = ? and id in (select jsonb_array_elements_text(?::jsonb))',
    [scope.accountId, scope.livemode, JSON.stringify([...new Set(lines.map((l) => l.warehouseId))])])).map((r) => r.id));
  const unknown = new Set(await unknownSkus(em, scope, [...new Set(lines.map((l) => l.sku))]));
  lines.forEach((l, i) => {
    if (!warehouses.has(l.warehouseId)) errors.push({ path: `lines.${i}.warehouse_id`, message: `no warehouse '${l.warehouseId}' in this account and mode` });
    if (unknown.has(l.sku)) errors.push({ path: `lines.${i}.sku`, message: `no product with SKU '${l.sku}' in this account and mode` });
  });
  if (errors.length) throw validationFailed(errors);
  return moveStock(em, scope, lines.map((l) => ({ warehouse_id: l.warehouseId, sku: l.sku, quantity: l.quantity })), context);
}
