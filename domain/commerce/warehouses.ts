import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { conflict } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import type { PageArgs } from './catalog.ts';
import { Warehouse, type Address } from './entities.ts';
import { isUniqueViolation } from '../../db/errors.ts';

export interface WarehouseView {
  id: string;
  object: 'warehouse';
  livemode: boolean;
  name: string;
  code: string | null;
  address: Address | null;
  metadata: Record<string, string>;
  created_at: string;
}

export interface WarehouseInput {
  name: string;
  code?: string;
  address?: Address;
  metadata?: Record<string, string>;
}

export function warehouseView(w: Warehouse): WarehouseView {
  return {
    id: w.id, object: 'warehouse', livemode: w.livemode, name: w.name, code: w.code ?? null,
    address: w.address ?? null, metadata: w.metadata, created_at: w.createdAt.toISOString(),
  };
}

export async function createWarehouse(em: EntityManager, scope: Scope, input: WarehouseInput): Promise<WarehouseView> {
  const warehouse = em.create(Warehouse, {
    id: newId('warehouse'), ...scopeColumns(scope), name: input.name, code: input.code ?? null,
    address: input.address ?? null, metadata: input.metadata ?? {},
  });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err, 'warehouses_code')) {
      throw conflict('warehouse_code_taken', `A warehouse with code '${input.code}' already exists.`, 'Choose another code, or use the existing warehouse.', { warehouse_code: input.code });
    }
    throw err;
  }
  return warehouseView(warehouse);
}

/** Warehouse by id for GET /v3/warehouses/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readWarehouse(orm: MikroORM, scope: Scope, id: string): Promise<WarehouseView> {
  return warehouseView(await readScopedOr404(orm, scope, Warehouse, id, 'warehouse'));
}

export async function listWarehouses(em: EntityManager, page: PageArgs): Promise<WarehouseView[]> {
  const rows = await em.find(Warehouse, page.where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(warehouseView);
}
