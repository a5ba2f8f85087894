import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { procurementOrderSchema, projectSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Order = z.input<typeof procurementOrderSchema>;

const orderExample = (status: Order['status'], escalations = 0): Order => ({
  id: 'po_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'procurement_order', livemode: false, vendor_id: 'ven_01jpa7tz8c2e4g6j8m0p2r4t6v',
  status, currency: 'USD', total: 4200, total_minor: 420000, base_total_minor: 420000,
  items: [{ line: 1, sku: 'MUG-BLUE', description: 'Blue mug', quantity: 1000, unit_price: 4.2, unit_price_minor: 420, amount_minor: 420000, received: status === 'received' ? 1000 : 0 }],
  approval_required: false,
  approval: {
    steps: [{ level: 1, role: 'procurement', permission: 'procurement:write', assignee: null,
      approved_by: status === 'approved' || status === 'received' ? 'key_01jpa7w2g5k7mp9s1v3x5z7b9d' : null,
      approved_at: status === 'approved' || status === 'received' ? ts : null, note: null }],
    rejection: status === 'rejected' ? { by: 'key_01jpa7w2g5k7mp9s1v3x5z7b9d', at: ts, reason: 'Over the quarter\'s budget' } : null,
    reminders: escalations ? [{ level: 1, role: 'procurement', assignee: null, at: ts, escalation: 1 }] : [],
  },
  escalation_count: escalations, next_escalation_at: status === 'pending_approval' ? '2025-03-16T09:30:00.000Z' : null,
  warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', project_id: null, created_by: 'key_01jpa7w0e3h5kn7r9t1w3y5a7c',
  vendor_reference: status === 'received' ? 'SVO-3F9A1C22B7E0' : null, cancellation_reason: status === 'cancelled' ? 'approval_expired' : null,
  receipts: status === 'received' ? [{ id: 'rcpt_01jpa83p7r9t1v3x5z7b9d1f3h', received_at: ts, lines: [{ line: 1, quantity: 1000 }], value: 420000, transaction_id: 'txn_01jpa83q8s0u2w4y6a8c0e2g4j' }] : [],
  bill: null, workflow_id: 'procurement-order-po_01jpa7v0f4j6kn8r1w3y5a7c9e', test_clock_time: null, metadata: {}, created_at: ts, updated_at: ts,
});

/** Events the ERP area records. */
export const erpEvents = [
  eventKind({
    type: 'procurement.order.created', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'A purchase order was created (and submitted for approval when its amount needs one).',
    example: orderExample('draft'),
  }),
  eventKind({
    type: 'procurement.order.approved', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'A purchase order received its last required approval (or needed none); it goes to the vendor next.',
    example: orderExample('approved'),
  }),
  eventKind({
    type: 'procurement.order.rejected', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'An approver rejected a purchase order.',
    example: orderExample('rejected'),
  }),
  eventKind({
    type: 'procurement.approval.escalated', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'A purchase order waited longer than the escalation period for its next approval; the approver was reminded (`approval.reminders`).',
    example: orderExample('pending_approval', 1),
  }),
  eventKind({
    type: 'procurement.order.received', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'Goods were received on a purchase order (in part or in full); `receipts` lists each receipt.',
    example: orderExample('received'),
  }),
  eventKind({
    type: 'procurement.order.cancelled', aboutCustomer: false, schema: procurementOrderSchema,
    description: 'A purchase order was cancelled: by request, by an operator, because its approval expired, or because the vendor refused it (`cancellation_reason`).',
    example: orderExample('cancelled'),
  }),
  eventKind({
    type: 'project.budget_exceeded', aboutCustomer: false, schema: projectSchema,
    description: 'The expenses booked against a project passed its budget (recorded once per project).',
    example: {
      id: 'proj_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'project', livemode: false, name: 'Warehouse rollout', description: null, customer_id: null,
      budget: 50000, budget_minor: 5000000, currency: 'USD', start_date: '2025-01-01', end_date: '2025-06-30', status: 'in_progress',
      milestones: [{ name: 'Design', weight: 30, completed: true, due_date: '2025-02-01' }], budget_exceeded_at: ts, metadata: {}, created_at: ts, updated_at: ts,
    },
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof erpEvents)[number]['type'], true> {}
}
