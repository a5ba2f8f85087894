import { z } from 'zod';
import { MAX_STOCK, applyStockChanges } from '../../../domain/commerce/public.ts';
import { actOnCycleCount, advanceCycleCountClock, getCycleCount, listCycleCounts, startCycleCount } from '../../../domain/warehouses/cycle-counts.ts';
import { getInventoryItem, getWarehouseInventory, listMovements } from '../../../domain/warehouses/inventory.ts';
import { recordStockMovement } from '../../../domain/warehouses/movements.ts';
import { createPickList, getPickList, listPickLists, transitionPickList } from '../../../domain/warehouses/pick-lists.ts';
import { realtimeHubOf, REALTIME_PATH } from '../../../domain/warehouses/realtime.ts';
import { LOCATION_PATTERN } from '../../../domain/warehouses/routing.ts';
import {
  COUNT_TYPES, CYCLE_COUNT_STATUSES, PICK_LIST_STATUSES, cycleCountSchema, inventorySettingsSchema, pickListSchema, stockMovementSchema, transferSchema,
  warehouseInventorySchema,
} from '../../../domain/warehouses/schemas.ts';
import { actOnTransfer, advanceTransferClock, getTransfer, listTransfers, putTransfer } from '../../../domain/warehouses/transfers.ts';
import { notFound, serviceUnavailable } from '../../../platform/errors.ts';
import { listDocument, listOf, listQuery, listRoute, pageOf } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { count, dateOrTimestamp, int32, isoDate } from '../../http/schemas.ts';
import type { AuthContext } from '../../http/context.ts';

const id = z.string().min(1).max(64);
const testClockTime = z.iso.datetime({ offset: true }).transform((t) => new Date(t)).optional()
  .describe('Sandbox only: the deadline runs on a frozen clock that starts here and moves with POST …/test_clock/advance.');
const advanceBody = z.strictObject({ frozen_time: z.iso.datetime({ offset: true }).transform((t) => new Date(t)).describe('The clock\'s new time; not before its current time.') });
const sku = z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9._\-/]*$/, 'SKUs use letters, digits and . _ - /');
const units = count(MAX_STOCK, 'stock quantities are whole units');
const positiveUnits = int32({ min: 1, max: MAX_STOCK, message: 'stock quantities are whole units' });
const location = z.string().trim().toUpperCase()
  .regex(LOCATION_PATTERN, 'a bin as <aisle letters>-<rack>-<shelf>[-<bin>], e.g. A-03-2-B');
const actor = (auth: AuthContext, requestId: string) => ({ actor: `key:${auth.keyId}`, requestId });

const warehouseParam = z.strictObject({ warehouse_id: id });
const inventoryQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1–100.'),
  cursor: z.string().max(200).optional().describe('`next_cursor` from the previous page.'),
  sku_prefix: z.string().max(64).optional().describe('Only SKUs starting with this text (matched literally).'),
  below_reorder: z.enum(['true', 'false']).transform((v) => v === 'true').optional().describe('Only SKUs whose available stock is at or below their reorder point.'),
});
const settingsBody = z.strictObject({
  location: location.nullable().optional(),
  safety_stock: units.optional(),
  reorder_point: units.optional(),
}).refine((b) => b.location !== undefined || b.safety_stock !== undefined || b.reorder_point !== undefined, 'send at least one of location, safety_stock, reorder_point');
const movementsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
  sku: sku.optional(),
  reason: z.string().max(64).optional(),
});
const adjustmentBody = z.strictObject({
  sku,
  quantity: z.number().int('whole units').min(-MAX_STOCK).max(MAX_STOCK).refine((n) => n !== 0, 'a non-zero number of units: positive adds, negative removes'),
  reason: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'a snake_case reason such as damaged or found').default('manual_adjustment'),
  reference: z.string().max(200).optional(),
});

const pickListBody = z.strictObject({
  order_ids: z.array(id).min(1, 'at least one order').max(100, 'at most 100 orders per pick list'),
  warehouse_id: id,
  optimize_route: z.boolean().default(true),
});
const pickListParam = z.strictObject({ pick_list_id: id });
const completeBody = z.strictObject({
  lines: z.array(z.strictObject({ location: z.string().max(100).optional(), sku, picked: units })).max(1000).default([])
    .describe('Picked quantity per line; lines left out were picked in full.'),
});

const transferItems = z.array(z.strictObject({ sku, quantity: positiveUnits })).min(1, 'at least one item').max(500, 'at most 500 items per transfer');
const transferBody = z.strictObject({
  from_warehouse: id,
  to_warehouse: id,
  items: transferItems,
  reference: z.string().trim().min(1).max(200).describe('Your reference; the same reference always names the same transfer.'),
  expected_arrival: isoDate.optional(),
  carrier: z.string().trim().min(1).max(100).optional(),
  test_clock_time: testClockTime,
});
const transferParam = z.strictObject({ transfer_id: id });
const receiveBody = z.strictObject({ items: transferItems });
const cancelBody = z.strictObject({ reason: z.string().max(500).optional() });

const cycleCountBody = z.strictObject({
  warehouse_id: id,
  count_type: z.enum(COUNT_TYPES),
  skus: z.array(sku).max(1000).optional().describe('For a partial count: the SKUs to count.'),
  tolerance: z.strictObject({
    percent: z.number().min(0).max(100).optional().describe('Variance beyond this share of the expected units needs approval (default 5).'),
    value: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('Variance worth more than this (minor units) needs approval (default 10000).'),
  }).optional(),
  abc: z.strictObject({
    a_days: z.number().int().min(1).max(3660).optional(),
    b_days: z.number().int().min(1).max(3660).optional(),
    c_days: z.number().int().min(1).max(3660).optional(),
  }).optional().describe('Days between counts per ABC class (default 30, 91, 365).'),
  deadline: dateOrTimestamp('end').optional().describe('An unfinished count is escalated then (cycle_count.overdue); default in 7 days.'),
  test_clock_time: testClockTime,
});
const countParam = z.strictObject({ cycle_count_id: id });
const countsBody = z.strictObject({
  counts: z.array(z.strictObject({ sku, quantity: units })).min(1).max(1000),
});
const approveBody = z.strictObject({ note: z.string().max(500).optional() });

const ticketSchema = z.object({
  object: z.literal('realtime_ticket'), ticket: z.string(), expires_at: z.iso.datetime(), url: z.string(),
}).meta({ id: 'RealtimeTicket' });

export const warehouseRoutes = [
  route({
    method: 'get', path: '/v3/warehouses/{warehouse_id}/inventory', operationId: 'getWarehouseInventory', tag: 'Warehouses',
    summary: 'Stock of a warehouse per SKU with its open alerts (low_stock, out_of_stock, below_safety_stock)', permission: 'warehouses:read', status: 200,
    params: warehouseParam, query: inventoryQuery, response: warehouseInventorySchema,
    async handler({ em, auth, params, query }) {
      return { body: await getWarehouseInventory(em(), auth, params.warehouse_id, query) };
    },
  }),
  route({
    method: 'patch', path: '/v3/warehouses/{warehouse_id}/inventory/{sku}', operationId: 'updateWarehouseInventoryItem', tag: 'Warehouses',
    summary: 'Set the bin location, safety stock and reorder point of a SKU in a warehouse', permission: 'warehouses:write', status: 200,
    params: z.strictObject({ warehouse_id: id, sku }), body: settingsBody, response: inventorySettingsSchema,
    async handler({ em, auth, params, body, requestId }) {
      await applyStockChanges(em(), auth, [{
        warehouse_id: params.warehouse_id, sku: params.sku, quantity: 0, operation: 'add',
        ...(body.reorder_point !== undefined ? { reorder_point: body.reorder_point } : {}),
        ...(body.safety_stock !== undefined ? { safety_stock: body.safety_stock } : {}),
        ...(body.location !== undefined ? { location: body.location ?? undefined } : {}),
      }], requestId, (_i, field) => field, { reason: 'settings', actor: `key:${auth.keyId}` }).catch((err: { errors?: { path: string }[] }) => {
        // Path parameters that name nothing are 404s, not field errors.
        if (err.errors?.some((e) => e.path === 'warehouse_id')) throw notFound('warehouse', params.warehouse_id);
        if (err.errors?.some((e) => e.path === 'sku')) throw notFound('SKU', params.sku);
        throw err;
      });
      if (body.location === null) {
        await em().execute('update inventory_levels set location = null where account_id = ? and livemode = ? and warehouse_id = ? and sku = ?',
          [auth.accountId, auth.livemode, params.warehouse_id, params.sku]);
      }
      const item = (await getInventoryItem(em(), auth, params.warehouse_id, params.sku))!;
      return { body: { ...item, object: 'warehouse_inventory_item', warehouse_id: params.warehouse_id, livemode: auth.livemode } };
    },
  }),
  route({
    method: 'get', path: '/v3/warehouses/{warehouse_id}/movements', operationId: 'listStockMovements', tag: 'Warehouses',
    summary: 'The movements ledger of a warehouse, newest first (who, why, before and after)', permission: 'warehouses:read', status: 200,
    params: warehouseParam, query: movementsQuery, response: listOf(stockMovementSchema),
    async handler({ em, auth, params, query }) {
      return { body: await listMovements(em(), auth, params.warehouse_id, query) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/{warehouse_id}/movements', operationId: 'recordStockMovement', tag: 'Warehouses',
    summary: 'Add or remove on-hand stock through the ledger (found, damaged, returns …); never below the reserved units', permission: 'warehouses:write', status: 201,
    params: warehouseParam, body: adjustmentBody, response: inventorySettingsSchema,
    async handler({ em, auth, params, body, requestId }) {
      await recordStockMovement(em(), auth, [{ warehouseId: params.warehouse_id, sku: body.sku, quantity: body.quantity }],
        { reason: body.reason, reference: body.reference ?? null, ...actor(auth, requestId) }).catch((err: { errors?: { path: string; message: string }[] }) => {
        if (err.errors?.some((e) => e.path.endsWith('warehouse_id'))) throw notFound('warehouse', params.warehouse_id);
        if (err.errors) err.errors = err.errors.map((e) => ({ ...e, path: e.path.replace(/^lines\.0\./, '') }));
        throw err;
      });
      const item = (await getInventoryItem(em(), auth, params.warehouse_id, body.sku))!;
      return { body: { ...item, object: 'warehouse_inventory_item', warehouse_id: params.warehouse_id, livemode: auth.livemode } };
    },
  }),

  // ---- pick lists ----
  route({
    method: 'post', path: '/v3/warehouses/pick-lists', operationId: 'createPickList', tag: 'Warehouses',
    summary: 'Pick list for orders awaiting fulfilment from a warehouse: lines by bin, quantities per order, an optimised walking route',
    permission: 'warehouses:write', status: 201, body: pickListBody, response: pickListSchema,
    async handler({ em, auth, body, requestId, resourceId }) {
      const pickList = await createPickList(em(), auth, await resourceId('pickList'), body, requestId);
      return { body: pickList, headers: { Location: `/v3/warehouses/pick-lists/${pickList.id}` } };
    },
  }),
  route({
    method: 'get', path: '/v3/warehouses/pick-lists', operationId: 'listPickLists', tag: 'Warehouses',
    summary: 'List pick lists, newest first', permission: 'warehouses:read', status: 200,
    query: z.strictObject({
      limit: z.coerce.number().int().min(1).max(100).default(20), cursor: z.string().max(200).optional(),
      status: z.enum(PICK_LIST_STATUSES).optional(),
    }),
    response: listOf(pickListSchema),
    async handler({ em, auth, query, req }) {
      const page = pageOf({ limit: query.limit, cursor: query.cursor, sort: '-created_at' });
      return listDocument(req, await listPickLists(em(), auth, { after: page.after, limit: page.limit, status: query.status }), page);
    },
  }),
  getRoute({
    path: '/v3/warehouses/pick-lists/{pick_list_id}', operationId: 'getPickList', tag: 'Warehouses',
    summary: 'Retrieve a pick list', permission: 'warehouses:read', readOnly: true, params: pickListParam, response: pickListSchema,
    get: ({ em, auth, params }) => getPickList(em(), auth, params.pick_list_id),
  }),
  route({
    method: 'post', path: '/v3/warehouses/pick-lists/{pick_list_id}/start', operationId: 'startPickList', tag: 'Warehouses',
    summary: 'Start picking (open → picking)', permission: 'warehouses:write', status: 200, params: pickListParam, response: pickListSchema,
    async handler({ em, auth, params, requestId }) {
      return { body: await transitionPickList(em(), auth, params.pick_list_id, 'picking', [], requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/pick-lists/{pick_list_id}/complete', operationId: 'completePickList', tag: 'Warehouses',
    summary: 'Confirm the picked quantities (picking → completed); short picks are recorded per order', permission: 'warehouses:write', status: 200,
    params: pickListParam, body: completeBody, response: pickListSchema,
    async handler({ em, auth, params, body, requestId }) {
      return { body: await transitionPickList(em(), auth, params.pick_list_id, 'completed', body.lines, requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/pick-lists/{pick_list_id}/cancel', operationId: 'cancelPickList', tag: 'Warehouses',
    summary: 'Cancel a pick list; its orders can go on another', permission: 'warehouses:write', status: 200,
    params: pickListParam, response: pickListSchema,
    async handler({ em, auth, params, requestId }) {
      return { body: await transitionPickList(em(), auth, params.pick_list_id, 'cancelled', [], requestId) };
    },
  }),

  // ---- transfers ----
  route({
    method: 'put', path: '/v3/warehouses/transfer', operationId: 'putTransfer', tag: 'Warehouses',
    summary: 'Transfer stock between warehouses: reserved at the source now (409 with the short SKUs), then dispatched and received (workflow transfer-<id>)',
    permission: 'warehouses:write', status: 201, temporal: true, body: transferBody, response: transferSchema,
    responses: { 200: { description: 'A transfer with this reference already exists: it is returned unchanged.', schema: transferSchema } },
    async handler({ deps, em, auth, body, requestId, resourceId }) {
      const { transfer, created } = await putTransfer(deps.temporal, em(), auth, await resourceId('warehouseTransfer'), body, actor(auth, requestId));
      return { status: created ? 201 : 200, body: transfer, headers: { Location: `/v3/warehouses/transfers/${transfer.id}` } };
    },
  }),
  listRoute({
    path: '/v3/warehouses/transfers', operationId: 'listTransfers', tag: 'Warehouses',
    summary: 'List transfers', permission: 'warehouses:read', item: transferSchema,
    list: ({ em, auth }, page) => listTransfers(em(), auth, {
      after: (page.where.id as { $lt?: string; $gt?: string } | undefined)?.$lt ?? (page.where.id as { $gt?: string } | undefined)?.$gt,
      limit: page.limit, direction: page.direction,
    }),
  }),
  getRoute({
    path: '/v3/warehouses/transfers/{transfer_id}', operationId: 'getTransfer', tag: 'Warehouses',
    summary: 'Retrieve a transfer', permission: 'warehouses:read', readOnly: true, params: transferParam, response: transferSchema,
    get: ({ em, auth, params }) => getTransfer(em(), auth, params.transfer_id),
  }),
  route({
    method: 'post', path: '/v3/warehouses/transfers/{transfer_id}/dispatch', operationId: 'dispatchTransfer', tag: 'Warehouses',
    summary: 'Dispatch: the units leave the source and show as in transit at the destination', permission: 'warehouses:write', status: 200, temporal: true,
    params: transferParam, response: transferSchema,
    async handler({ deps, em, auth, params, requestId }) {
      return { body: await actOnTransfer(deps.temporal, em(), auth, params.transfer_id, { kind: 'dispatch' }, actor(auth, requestId)) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/transfers/{transfer_id}/receive', operationId: 'receiveTransfer', tag: 'Warehouses',
    summary: 'Receive units at the destination (partial receipts allowed; more than outstanding is refused)', permission: 'warehouses:write', status: 200, temporal: true,
    params: transferParam, body: receiveBody, response: transferSchema,
    async handler({ deps, em, auth, params, body, requestId, resourceId }) {
      return { body: await actOnTransfer(deps.temporal, em(), auth, params.transfer_id, { kind: 'receive', receiptId: await resourceId('transferReceipt'), items: body.items }, actor(auth, requestId)) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/transfers/{transfer_id}/test_clock/advance', operationId: 'advanceTransferClock', tag: 'Warehouses',
    summary: 'Sandbox: move a transfer\'s test clock; answers once its delay check ran on the new time', permission: 'warehouses:write', status: 200, temporal: true,
    params: transferParam, body: advanceBody, response: transferSchema,
    async handler({ deps, em, auth, params, body }) {
      return { body: await advanceTransferClock(deps.temporal, em(), auth, params.transfer_id, body.frozen_time) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/transfers/{transfer_id}/cancel', operationId: 'cancelTransfer', tag: 'Warehouses',
    summary: 'Cancel a transfer before dispatch; the reservation at the source is released', permission: 'warehouses:write', status: 200, temporal: true,
    params: transferParam, body: cancelBody, response: transferSchema,
    async handler({ deps, em, auth, params, body, requestId }) {
      return { body: await actOnTransfer(deps.temporal, em(), auth, params.transfer_id, { kind: 'cancel', reason: body.reason ?? null }, actor(auth, requestId)) };
    },
  }),

  // ---- cycle counts ----
  route({
    method: 'post', path: '/v3/warehouses/cycle-count', operationId: 'startCycleCount', tag: 'Warehouses',
    summary: 'Start a cycle count (full, partial or ABC): expected quantities are frozen now (workflow cycle-count-<id>)',
    permission: 'warehouses:write', status: 201, temporal: true, body: cycleCountBody, response: cycleCountSchema,
    async handler({ deps, em, auth, body, requestId, resourceId }) {
      const count = await startCycleCount(deps.temporal, em(), auth, await resourceId('cycleCount'),
        { ...body, deadline: body.deadline?.toISOString() }, actor(auth, requestId));
      return { body: count, headers: { Location: `/v3/warehouses/cycle-counts/${count.id}` } };
    },
  }),
  listRoute({
    path: '/v3/warehouses/cycle-counts', operationId: 'listCycleCounts', tag: 'Warehouses',
    summary: 'List cycle counts, newest first (filters: warehouse_id, status)', permission: 'warehouses:read', item: cycleCountSchema,
    query: z.strictObject({
      ...listQuery,
      warehouse_id: id.optional().describe('Only counts of this warehouse.'),
      status: z.enum(CYCLE_COUNT_STATUSES).optional(),
    }),
    list: ({ em, auth, query }, page) => listCycleCounts(em(), auth, { warehouseId: query.warehouse_id, status: query.status }, {
      after: (page.where.id as { $lt?: string; $gt?: string } | undefined)?.$lt ?? (page.where.id as { $gt?: string } | undefined)?.$gt,
      limit: page.limit, direction: page.direction,
    }),
  }),
  getRoute({
    path: '/v3/warehouses/cycle-counts/{cycle_count_id}', operationId: 'getCycleCount', tag: 'Warehouses',
    summary: 'A cycle count with its progress, lines and variances', permission: 'warehouses:read', readOnly: true, params: countParam, response: cycleCountSchema,
    get: ({ em, auth, params }) => getCycleCount(em(), auth, params.cycle_count_id),
  }),
  route({
    method: 'post', path: '/v3/warehouses/cycle-counts/{cycle_count_id}/counts', operationId: 'recordCycleCounts', tag: 'Warehouses',
    summary: 'Record counted quantities (a recount replaces a line); the last line posts the variances or asks for approval',
    permission: 'warehouses:write', status: 200, temporal: true, params: countParam, body: countsBody, response: cycleCountSchema,
    async handler({ deps, em, auth, params, body, requestId }) {
      return { body: await actOnCycleCount(deps.temporal, em(), auth, params.cycle_count_id, { kind: 'counts', counts: body.counts }, actor(auth, requestId)) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/cycle-counts/{cycle_count_id}/approve', operationId: 'approveCycleCount', tag: 'Warehouses',
    summary: 'Approve variances beyond tolerance: every adjustment posts to the ledger', permission: 'inventory_approvals:write', status: 200, temporal: true,
    params: countParam, body: approveBody, response: cycleCountSchema,
    async handler({ deps, em, auth, params, body, requestId }) {
      return { body: await actOnCycleCount(deps.temporal, em(), auth, params.cycle_count_id, { kind: 'approve', note: body.note ?? null }, actor(auth, requestId)) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/cycle-counts/{cycle_count_id}/test_clock/advance', operationId: 'advanceCycleCountClock', tag: 'Warehouses',
    summary: 'Sandbox: move a cycle count\'s test clock; answers once its deadline check ran on the new time', permission: 'warehouses:write', status: 200, temporal: true,
    params: countParam, body: advanceBody, response: cycleCountSchema,
    async handler({ deps, em, auth, params, body }) {
      return { body: await advanceCycleCountClock(deps.temporal, em(), auth, params.cycle_count_id, body.frozen_time) };
    },
  }),
  route({
    method: 'post', path: '/v3/warehouses/cycle-counts/{cycle_count_id}/cancel', operationId: 'cancelCycleCount', tag: 'Warehouses',
    summary: 'Abandon a cycle count; nothing is posted', permission: 'warehouses:write', status: 200, temporal: true,
    params: countParam, body: cancelBody, response: cycleCountSchema,
    async handler({ deps, em, auth, params, body, requestId }) {
      return { body: await actOnCycleCount(deps.temporal, em(), auth, params.cycle_count_id, { kind: 'close', mode: 'abort', reason: body.reason ?? 'cancelled through the API' }, actor(auth, requestId)) };
    },
  }),

  // ---- realtime ----
  route({
    method: 'post', path: '/v3/inventory/realtime/tickets', operationId: 'createRealtimeTicket', tag: 'Warehouses',
    summary: `A short-lived ticket for the inventory WebSocket (${REALTIME_PATH}?ticket=…), for browsers that cannot send headers`,
    permission: 'warehouses:read', status: 201, response: ticketSchema,
    async handler({ deps, auth }) {
      const hub = realtimeHubOf(deps);
      if (!hub) throw serviceUnavailable('the realtime inventory feed');
      const { ticket, expiresAt } = await hub.issueTicket({ keyId: auth.keyId, accountId: auth.accountId, livemode: auth.livemode });
      return { body: { object: 'realtime_ticket', ticket, expires_at: expiresAt.toISOString(), url: `${REALTIME_PATH}?ticket=${ticket}` } };
    },
  }),
];
