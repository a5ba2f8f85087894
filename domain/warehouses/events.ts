import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { cycleCountSchema, inventoryAdjustmentSchema, pickListSchema, transferSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
const wh = 'wh_01jpa81m5p7r9t1v3x5z7b9d1f';
const wh2 = 'wh_01jpa81q2s4u6w8y0a2c4e6g8j';

const transferExample: z.input<typeof transferSchema> = {
  id: 'wtr_01jpa9a2c4e6g8j0m2p4r6t8v0', object: 'warehouse_transfer', livemode: false, reference: 'REPLEN-2025-03-14',
  from_warehouse: wh, to_warehouse: wh2, status: 'in_transit',
  items: [{ sku: 'MUG-BLUE', quantity: 40, received: 0, outstanding: 40 }],
  expected_arrival: '2025-03-16', carrier: 'dhl', delayed: true, workflow_id: 'transfer-wtr_01jpa9a2c4e6g8j0m2p4r6t8v0',
  dispatched_at: ts, received_at: null, cancelled_at: null, cancellation_reason: null, created_at: ts, updated_at: ts,
};

const countExample = (status: z.input<typeof cycleCountSchema>['status'], overdue: boolean): z.input<typeof cycleCountSchema> => ({
  id: 'cc_01jpa9c4e6g8j0m2p4r6t8v0x2', object: 'cycle_count', livemode: false, warehouse_id: wh, count_type: 'partial', status,
  progress: { lines: 1, counted: status === 'completed' ? 1 : 0, remaining: status === 'completed' ? 0 : 1 },
  tolerance: { percent: 5, value: 10000 }, classification: null,
  lines: [{
    sku: 'MUG-BLUE', location: 'A-03-2-B', abc_class: null, expected: 40, counted: status === 'completed' ? 38 : null, movements_during: 0,
    variance: status === 'completed' ? -2 : null, variance_value: status === 'completed' ? 1290 : null, exceeds_tolerance: false,
    adjusted: status === 'completed' ? -2 : null,
  }],
  deadline: '2025-03-21T09:30:00.000Z', overdue, approved_by: null, workflow_id: 'cycle-count-cc_01jpa9c4e6g8j0m2p4r6t8v0x2',
  created_at: ts, updated_at: ts, completed_at: status === 'completed' ? ts : null,
});

/** Events the warehouses area records (`inventory.low_stock` is the commerce area's, recorded by the stock functions both use). */
export const warehouseEvents = [
  eventKind({
    type: 'warehouse.transfer.delayed', aboutCustomer: false, schema: transferSchema,
    description: 'A transfer was not fully received by the end of its expected arrival day (recorded once).',
    example: transferExample,
  }),
  eventKind({
    type: 'cycle_count.completed', aboutCustomer: false, schema: cycleCountSchema,
    description: 'A cycle count finished: its variances were posted to the movements ledger (or it was force-closed).',
    example: countExample('completed', false),
  }),
  eventKind({
    type: 'cycle_count.overdue', aboutCustomer: false, schema: cycleCountSchema,
    description: 'A cycle count passed its deadline unfinished (recorded once; the count stays open).',
    example: countExample('counting', true),
  }),
  eventKind({
    type: 'inventory.adjusted', aboutCustomer: false, schema: inventoryAdjustmentSchema,
    description: 'On-hand stock was adjusted by a cycle count (every line of the count in one posting).',
    example: {
      object: 'inventory_adjustment', livemode: false, warehouse_id: wh, cycle_count_id: 'cc_01jpa9c4e6g8j0m2p4r6t8v0x2',
      lines: [{ sku: 'MUG-BLUE', quantity_before: 40, quantity_after: 38, adjusted: -2 }], created_at: ts,
    },
  }),
  eventKind({
    type: 'pick_list.completed', aboutCustomer: false, schema: pickListSchema,
    description: 'A pick list was picked; `short_picks` names each order that got fewer units than it reserved.',
    example: {
      id: 'pick_01jpa9e6g8j0m2p4r6t8v0x2z4', object: 'pick_list', livemode: false, warehouse_id: wh, status: 'completed', optimize_route: true,
      order_ids: ['ord_01jpa7x6h8m0pr2t4w6y8b0d2f'],
      lines: [{ location: 'A-03-2-B', sku: 'MUG-BLUE', quantity: 2, picked: 1, orders: [{ order_id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f', quantity: 2 }] }],
      route: { stops: ['A-03-2-B'], distance: 9, unoptimized_distance: 9, saving_percent: 0 },
      short_picks: [{ order_id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f', sku: 'MUG-BLUE', location: 'A-03-2-B', ordered: 2, picked: 1, short: 1 }],
      created_at: ts, updated_at: ts, completed_at: ts, cancelled_at: null,
    },
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof warehouseEvents)[number]['type'], true> {}
}
