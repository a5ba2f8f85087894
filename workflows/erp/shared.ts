/**
 * What crosses the layers for the ERP area: pure (no Node, ORM or activity imports), since workflows
 * import it. Purchase orders run one workflow each (`procurement-order-po_…`); events from other
 * areas reach the ledger through one short workflow per event (`ledger-posting-evt_…`).
 */
import { defineQuery, defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type { z } from 'zod';
import type { procurementOrderSchema } from '../../domain/erp/schemas.ts';
import { workflowIds } from '../kit/ids.ts';

/** `procurement-order-po_…`. */
export const procurementOrderWorkflowIds = workflowIds('procurement-order');
export const procurementOrderWorkflowId = procurementOrderWorkflowIds.id;
/** `ledger-posting-evt_…`: one per outbox event posted to the ledger. */
export const ledgerPostingWorkflowId = workflowIds('ledger-posting').id;

export const PROCUREMENT_STATUSES = [
  'draft', 'pending_approval', 'approved', 'rejected', 'ordered', 'partially_received', 'received', 'closed', 'cancelled',
] as const;
export type ProcurementStatus = (typeof PROCUREMENT_STATUSES)[number];
export const TERMINAL_STATUSES: readonly ProcurementStatus[] = ['rejected', 'closed', 'cancelled'];

/** Which statuses each action may start from. */
export const ORDER_TRANSITIONS = {
  approve: ['pending_approval'],
  reject: ['pending_approval'],
  editItems: ['draft', 'pending_approval'],
  submit: ['draft'],
  receive: ['ordered', 'partially_received'],
  bill: ['received'],
  cancel: ['draft', 'pending_approval', 'approved', 'ordered'],
  escalate: ['pending_approval'],
  reassign: ['pending_approval'],
} as const satisfies Record<string, readonly ProcurementStatus[]>;

/** The roles that approve, and the permission each needs (`<scope>:write` of its scope). */
export const APPROVER_PERMISSION = { procurement: 'procurement:write', finance: 'finance:write' } as const;
export type ApproverRole = keyof typeof APPROVER_PERMISSION;

export interface OrderItem {
  line: number;
  sku: string | null;
  description: string | null;
  quantity: number;
  /** Minor units of the order's currency. */
  unit_price: number;
  /** quantity × unit_price. */
  amount: number;
  received: number;
}

export interface ApprovalStep {
  level: number;
  role: ApproverRole;
  permission: (typeof APPROVER_PERMISSION)[ApproverRole];
  /** Only this key may approve the step (set by an operator's reassignment); null: any key with the permission. */
  assignee: string | null;
  approved_by: string | null;
  approved_at: string | null;
  note: string | null;
}

export interface OrderApproval {
  steps: ApprovalStep[];
  rejection: { by: string; at: string; reason: string | null } | null;
  /** Reminders sent to the next approver at each escalation. */
  reminders: { level: number; role: ApproverRole; assignee: string | null; at: string; escalation: number }[];
}

export interface OrderReceipt {
  id: string;
  received_at: string;
  lines: { line: number; quantity: number }[];
  /** Minor units of the order's currency: Σ quantity × unit_price. */
  value: number;
  transaction_id: string | null;
}

export interface OrderBill {
  id: string;
  invoice_number: string;
  amount: number;
  received_value: number;
  variance: number;
  transaction_id: string;
  recorded_at: string;
}

export type ProcurementOrderView = z.output<typeof procurementOrderSchema>;

export interface ProcurementOrderInput {
  orderId: string;
  accountId: string;
  livemode: boolean;
  vendorId: string;
  currency: string;
  items: OrderItem[];
  total: number;
  baseTotal: number;
  /** Units of the base currency per unit of the order's currency, fixed when the order is made. */
  exchangeRate: string;
  approvalRequired: boolean;
  /** false: the order stays a draft (items editable, no approvals yet) until `submitOrder`. */
  submit?: boolean;
  roles: ApproverRole[];
  warehouseId: string | null;
  projectId: string | null;
  /** The API key that created the order: it may not approve it. */
  createdBy: string;
  escalationMs: number;
  escalationLimit: number;
  tolerancePercent: string;
  /** Sandbox: the order's own frozen clock starts here (epoch ms) and moves only by `advanceClock`. */
  testClockStart: number | null;
  metadata: Record<string, string>;
  requestId: string | null;
}

/** The workflow's state: what the row shows, kept by the workflow. */
export interface OrderState {
  status: ProcurementStatus;
  items: OrderItem[];
  total: number;
  baseTotal: number;
  approval: OrderApproval;
  escalationCount: number;
  nextEscalationAt: number | null;
  vendorReference: string | null;
  cancellationReason: string | null;
  receipts: OrderReceipt[];
  bill: OrderBill | null;
  clockNow: number;
  version: number;
  /**
   * Idempotency-Keys of the approve, reject and cancel requests applied (the latest 50): a retry of
   * one whose answer was lost answers the order as it is, not 409.
   */
  appliedKeys?: string[];
}

export type OrderEvent =
  | 'procurement.order.created' | 'procurement.order.approved' | 'procurement.order.rejected'
  | 'procurement.approval.escalated' | 'procurement.order.received' | 'procurement.order.cancelled' | null;

export interface Actor {
  /** The API key (or `operator:<name>` for an admin action). */
  keyId: string;
  /** The key's permissions (`*` for a standard key). */
  permissions: string[];
}

export const awaitOrderRecordedUpdate = defineUpdate<ProcurementOrderView, []>('awaitOrderRecorded');
export const approveOrderUpdate = defineUpdate<ProcurementOrderView, [Actor & { note: string | null; requestId: string | null; idempotencyKey?: string | null }]>('approveOrder');
export const rejectOrderUpdate = defineUpdate<ProcurementOrderView, [Actor & { reason: string | null; requestId: string | null; idempotencyKey?: string | null }]>('rejectOrder');
export const editItemsUpdate = defineUpdate<ProcurementOrderView, [{ items: OrderItem[]; total: number; baseTotal: number; roles: ApproverRole[]; requestId: string | null }]>('editOrderItems');
export const receiveOrderUpdate = defineUpdate<ProcurementOrderView, [{ receiptId: string; lines: { line: number; quantity: number }[]; requestId: string | null }]>('receiveOrder');
export const billOrderUpdate = defineUpdate<ProcurementOrderView, [{ billId: string; invoiceNumber: string; amount: number; requestId: string | null }]>('billOrder');
export const submitOrderUpdate = defineUpdate<ProcurementOrderView, [{ requestId: string | null }]>('submitOrder');
export const cancelOrderUpdate = defineUpdate<ProcurementOrderView, [{ reason: string; requestId: string | null; idempotencyKey?: string | null }]>('cancelOrder');
/** Sandbox: moves the order's test clock to `to` (epoch ms); answers once everything due by then has run. */
export const advanceOrderClockUpdate = defineUpdate<ProcurementOrderView, [{ to: number }]>('advanceOrderClock');
/** Admin: escalate now, as if the timer had fired. */
export const escalateOrderUpdate = defineUpdate<ProcurementOrderView, []>('escalateOrder');
/** Admin: only `assignee` may approve the pending step `level` from now on. */
export const reassignApproverUpdate = defineUpdate<ProcurementOrderView, [{ level: number; assignee: string }]>('reassignApprover');
export const orderStateQuery = defineQuery<{ state: OrderState; caughtUpTo: number; waitingFor: string }>('orderState');

export interface LedgerPostingInput {
  eventId: string;
  eventType: string;
  accountId: string;
  livemode: boolean;
  object: Record<string, unknown>;
}

/**
 * Database steps. A refusal (a 4xx ApiError) is never retried (worker/activity-refusals.ts). Bounded:
 * an outage is retried for up to a day, then the step fails and the order's workflow shows it.
 */
export const DB_STEPS = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '24 hours',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
} satisfies ActivityOptions;

/**
 * The vendor call: retried with backoff (0.5 s doubling to 1 min) at most 30 times, each with the same
 * vendor idempotency key, so a vendor that is down for a while still gets the order exactly once.
 */
export const VENDOR_STEPS = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
} satisfies ActivityOptions;

export const vendorOrderKey = (orderId: string) => `${orderId}:purchase-order`;
