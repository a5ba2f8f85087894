import { z } from 'zod';

/**
 * The warehouses area's resources, declared once (routes, OpenAPI, event catalog); TS types inferred.
 * Pure: zod only (workflows import the types with `import type`).
 */

export const ALERT_TYPES = ['out_of_stock', 'below_safety_stock', 'low_stock'] as const;
export type AlertType = (typeof ALERT_TYPES)[number];

export const inventoryItemSchema = z.object({
  sku: z.string(),
  quantity: z.number().int(),
  reserved: z.number().int(),
  available: z.number().int(),
  in_transit: z.number().int().describe('Units dispatched to this warehouse by transfers and not received yet.'),
  safety_stock: z.number().int(),
  reorder_point: z.number().int(),
  location: z.string().nullable().describe('Bin, e.g. A-03-2-B (aisle, rack, shelf, bin).'),
  last_updated: z.iso.datetime(),
});

export const inventoryAlertSchema = z.object({
  type: z.enum(ALERT_TYPES).describe('One open alert per SKU and warehouse, the most severe: out_of_stock, then below_safety_stock, then low_stock.'),
  sku: z.string(),
  current_stock: z.number().int().describe('Available units (on hand minus reserved).'),
  reorder_point: z.number().int(),
  safety_stock: z.number().int(),
  last_updated: z.iso.datetime().describe('When the level last changed.'),
});

export const warehouseInventorySchema = z
  .object({
    object: z.literal('warehouse_inventory'),
    warehouse_id: z.string(),
    livemode: z.boolean(),
    inventory: z.array(inventoryItemSchema),
    alerts: z.array(inventoryAlertSchema).describe('Open alerts of the whole warehouse (within the `sku_prefix` filter), most severe first, at most 100.'),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: 'WarehouseInventory' });

export const inventorySettingsSchema = inventoryItemSchema
  .extend({ object: z.literal('warehouse_inventory_item'), warehouse_id: z.string(), livemode: z.boolean() })
  .meta({ id: 'WarehouseInventoryItem' });

export const stockMovementSchema = z
  .object({
    object: z.literal('stock_movement'),
    id: z.string().describe('Ledger position (`mov_<n>`).'),
    seq: z.number().int().nullable().describe('Per-account-and-mode sequence number of the realtime feed; null for the few milliseconds between the commit and its numbering.'),
    livemode: z.boolean(),
    warehouse_id: z.string(),
    sku: z.string(),
    quantity_before: z.number().int(),
    quantity_after: z.number().int(),
    reserved_before: z.number().int(),
    reserved_after: z.number().int(),
    in_transit_before: z.number().int(),
    in_transit_after: z.number().int(),
    reason: z.string().describe('stock_update, bulk_update, order_reservation, order_fulfillment, order_cancellation, transfer_reservation, transfer_dispatch, transfer_receipt, transfer_cancellation, cycle_count, manual_adjustment, …'),
    reference: z.string().nullable(),
    actor: z.string().nullable(),
    request_id: z.string().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'StockMovement' });

/** A committed stock change as the realtime feeds send it (the WebSocket's `stock_changed` message, GraphQL's `inventoryChanged`). */
export const stockChangeSchema = z
  .object({
    seq: z.number().int().describe('Per-account-and-mode sequence number, in commit order.'),
    warehouse_id: z.string(),
    sku: z.string(),
    quantity: z.number().int().describe('On hand after the change.'),
    reserved: z.number().int(),
    available: z.number().int().describe('quantity − reserved.'),
    in_transit: z.number().int(),
    change: z.object({ quantity: z.number().int(), reserved: z.number().int(), in_transit: z.number().int() }).describe('The deltas of this change.'),
    reason: z.string(),
    reference: z.string().nullable(),
    occurred_at: z.string(),
  })
  .meta({ id: 'StockChange' });

export const routeSchema = z.object({
  stops: z.array(z.string()).describe('Locations in visiting order, from and back to the depot (the front of aisle A).'),
  distance: z.number().describe('Metres walked along the route.'),
  unoptimized_distance: z.number().nullable().describe('Metres walked visiting the locations in bin order; null when the route was not optimised.'),
  saving_percent: z.number().nullable(),
});

export const PICK_LIST_STATUSES = ['open', 'picking', 'completed', 'cancelled'] as const;
export const pickListSchema = z
  .object({
    id: z.string(),
    object: z.literal('pick_list'),
    livemode: z.boolean(),
    warehouse_id: z.string(),
    status: z.enum(PICK_LIST_STATUSES),
    optimize_route: z.boolean(),
    order_ids: z.array(z.string()),
    lines: z.array(z.object({
      location: z.string(),
      sku: z.string(),
      quantity: z.number().int(),
      picked: z.number().int().nullable(),
      orders: z.array(z.object({ order_id: z.string(), quantity: z.number().int() })),
    })),
    route: routeSchema,
    short_picks: z.array(z.object({ order_id: z.string(), sku: z.string(), location: z.string(), ordered: z.number().int(), picked: z.number().int(), short: z.number().int() })),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    completed_at: z.iso.datetime().nullable(),
    cancelled_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'PickList' });

export const TRANSFER_STATUSES = ['reserved', 'in_transit', 'partially_received', 'received', 'cancelled'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];
export const transferSchema = z
  .object({
    id: z.string(),
    object: z.literal('warehouse_transfer'),
    livemode: z.boolean(),
    reference: z.string(),
    from_warehouse: z.string(),
    to_warehouse: z.string(),
    status: z.enum(TRANSFER_STATUSES),
    items: z.array(z.object({
      sku: z.string(), quantity: z.number().int(), received: z.number().int(), outstanding: z.number().int(),
    })),
    expected_arrival: z.iso.date().nullable(),
    carrier: z.string().nullable(),
    delayed: z.boolean(),
    workflow_id: z.string(),
    dispatched_at: z.iso.datetime().nullable(),
    received_at: z.iso.datetime().nullable(),
    cancelled_at: z.iso.datetime().nullable(),
    cancellation_reason: z.string().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WarehouseTransfer' });

export const COUNT_TYPES = ['full', 'partial', 'abc_analysis'] as const;
export const CYCLE_COUNT_STATUSES = ['counting', 'pending_approval', 'completed', 'cancelled'] as const;
export type CycleCountStatus = (typeof CYCLE_COUNT_STATUSES)[number];
export const ABC_CLASSES = ['A', 'B', 'C'] as const;

export const cycleCountLineSchema = z.object({
  sku: z.string(),
  location: z.string().nullable(),
  abc_class: z.enum(ABC_CLASSES).nullable(),
  expected: z.number().int().describe('On-hand units frozen when the count started.'),
  counted: z.number().int().nullable(),
  movements_during: z.number().int().describe('Net on-hand change recorded between the start of the count and this line\'s count.'),
  variance: z.number().int().nullable().describe('counted − (expected + movements_during).'),
  variance_value: z.number().int().nullable().describe('|variance| × unit value, minor units of the product\'s currency.'),
  exceeds_tolerance: z.boolean(),
  adjusted: z.number().int().nullable().describe('Units posted to the ledger when the count completed.'),
});

export const cycleCountSchema = z
  .object({
    id: z.string(),
    object: z.literal('cycle_count'),
    livemode: z.boolean(),
    warehouse_id: z.string(),
    count_type: z.enum(COUNT_TYPES),
    status: z.enum(CYCLE_COUNT_STATUSES),
    progress: z.object({ lines: z.number().int(), counted: z.number().int(), remaining: z.number().int() }),
    tolerance: z.object({ percent: z.number(), value: z.number().int() }),
    classification: z.array(z.object({
      sku: z.string(), abc_class: z.enum(ABC_CLASSES), consumption_value: z.number().int(), share_percent: z.number(),
      last_counted_at: z.iso.datetime().nullable(), due: z.boolean(),
    })).nullable(),
    lines: z.array(cycleCountLineSchema),
    deadline: z.iso.datetime(),
    overdue: z.boolean(),
    approved_by: z.string().nullable(),
    workflow_id: z.string(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    completed_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'CycleCount' });

export const inventoryAdjustmentSchema = z
  .object({
    object: z.literal('inventory_adjustment'),
    livemode: z.boolean(),
    warehouse_id: z.string(),
    cycle_count_id: z.string(),
    lines: z.array(z.object({ sku: z.string(), quantity_before: z.number().int(), quantity_after: z.number().int(), adjusted: z.number().int() })),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'InventoryAdjustment' });

export type WarehouseInventoryView = z.output<typeof warehouseInventorySchema>;
export type InventoryItemView = z.output<typeof inventoryItemSchema>;
export type StockMovementView = z.output<typeof stockMovementSchema>;
export type StockChangeView = z.output<typeof stockChangeSchema>;
export type PickListView = z.output<typeof pickListSchema>;
export type TransferView = z.output<typeof transferSchema>;
export type CycleCountView = z.output<typeof cycleCountSchema>;
export type InventoryAdjustmentView = z.output<typeof inventoryAdjustmentSchema>;
