import { z } from 'zod';
import { MAX_BULK_ITEMS, MAX_STOCK, STOCK_OPERATIONS, applyStockChanges, getStock } from '../../../domain/commerce/inventory.ts';
import { inventoryLevelSchema } from '../../../domain/commerce/schemas.ts';
import { createWarehouse, listWarehouses, readWarehouse } from '../../../domain/commerce/warehouses.ts';
import { metadata } from '../../http/schemas.ts';
import { listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { address, sku } from './schemas.ts';

const warehouseSchema = z
  .object({
    id: z.string(),
    object: z.literal('warehouse'),
    livemode: z.boolean(),
    name: z.string(),
    code: z.string().nullable(),
    address: address.nullable(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Warehouse' });

const createWarehouseBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  code: z.string().trim().min(1).max(32).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and -').optional().describe('Short code, unique per account and mode (e.g. AMS-1).'),
  address: address.optional(),
  metadata: metadata.optional(),
});

const quantity = z.number().int('stock quantities are whole units').min(0).max(MAX_STOCK);
const stockFields = {
  warehouse_id: z.string().min(1).max(64),
  quantity,
  operation: z.enum(STOCK_OPERATIONS).describe('set: on-hand becomes `quantity`; add; subtract (never below the reserved units).'),
  reorder_point: z.number().int().min(0).max(MAX_STOCK).optional().describe('inventory.low_stock is recorded when available stock falls to this level.'),
  safety_stock: z.number().int().min(0).max(MAX_STOCK).optional(),
  location: z.string().max(100).optional().describe('Bin or shelf, e.g. A-03-2.'),
};
const stockBody = z.strictObject(stockFields);
const bulkBody = z.strictObject({
  items: z.array(z.strictObject({ sku, ...stockFields }))
    .min(1, 'send at least one item')
    .max(MAX_BULK_ITEMS, `at most ${MAX_BULK_ITEMS} items per call; split the batch`),
});

const skuParam = z.strictObject({ sku });
const warehouseId = z.strictObject({ warehouse_id: z.string().min(1).max(64) });
const stockList = z.object({ object: z.literal('list'), sku: z.string(), data: z.array(inventoryLevelSchema), total_available: z.number().int() });

export const inventoryRoutes = [
  route({
    method: 'post', path: '/v3/warehouses', operationId: 'createWarehouse', tag: 'Warehouses',
    summary: 'Create a warehouse (stock is held per warehouse)', permission: 'warehouses:write', status: 201,
    body: createWarehouseBody, response: warehouseSchema,
    async handler({ em, auth, body }) {
      const warehouse = await createWarehouse(em(), auth, body);
      return { body: warehouse, headers: { Location: `/v3/warehouses/${warehouse.id}` } };
    },
  }),
  getRoute({
    path: '/v3/warehouses/{warehouse_id}', operationId: 'getWarehouse', tag: 'Warehouses',
    summary: 'Retrieve a warehouse', permission: 'warehouses:read', readOnly: true,
    params: warehouseId, response: warehouseSchema,
    get: ({ deps, auth, params }) => readWarehouse(deps.orm, auth, params.warehouse_id),
  }),
  listRoute({
    path: '/v3/warehouses', operationId: 'listWarehouses', tag: 'Warehouses',
    summary: 'List warehouses', permission: 'warehouses:read', item: warehouseSchema,
    list: ({ em }, page) => listWarehouses(em(), page),
  }),
  route({
    method: 'put', path: '/v3/inventory/{sku}/stock', operationId: 'updateStock', tag: 'Commerce',
    summary: 'Set, add or subtract stock of a SKU in a warehouse (atomic; never below zero: 409 insufficient_stock)',
    permission: 'commerce:write', status: 200,
    params: skuParam, body: stockBody, response: inventoryLevelSchema,
    async handler({ em, auth, params, body, requestId }) {
      const [level] = await applyStockChanges(em(), auth, [{ ...body, sku: params.sku }], requestId, (_i, field) => field, { reason: 'stock_update', actor: `key:${auth.keyId}` });
      return { body: level };
    },
  }),
  route({
    method: 'get', path: '/v3/inventory/{sku}/stock', operationId: 'getStock', tag: 'Commerce',
    summary: 'Stock of a SKU in every warehouse', permission: 'commerce:read', status: 200,
    params: skuParam, response: stockList,
    async handler({ em, auth, params }) {
      const data = await getStock(em(), auth, params.sku);
      return { body: { object: 'list', sku: params.sku, data, total_available: data.reduce((s, l) => s + l.available, 0) } };
    },
  }),
  route({
    method: 'post', path: '/v3/inventory/bulk-update', operationId: 'bulkUpdateStock', tag: 'Commerce',
    summary: `Apply up to ${MAX_BULK_ITEMS} stock operations in one transaction: all or nothing, every bad item listed`,
    permission: 'commerce:write', status: 200,
    // 1,000 items with locations run to a few hundred KiB; allow headroom over the default 1 MiB.
    bodyLimit: 4 * 1024 * 1024,
    body: bulkBody,
    response: z.object({ object: z.literal('inventory_bulk_update'), updated: z.number().int(), data: z.array(inventoryLevelSchema) }),
    async handler({ em, auth, body, requestId }) {
      const data = await applyStockChanges(em(), auth, body.items, requestId, (i, field) => `items.${i}.${field}`, { reason: 'bulk_update', actor: `key:${auth.keyId}` });
      return { body: { object: 'inventory_bulk_update', updated: body.items.length, data } };
    },
  }),
];
