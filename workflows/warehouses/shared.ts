/**
 * What crosses the layers for the warehouses area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import { defineQuery, defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type { CycleCountView, TransferView } from '../../domain/warehouses/schemas.ts';
import { workflowIds } from '../kit/ids.ts';
import { REFUSAL_TYPES } from '../kit/failures.ts';

/** `transfer-wtr_…`. */
export const transferWorkflowIds = workflowIds('transfer');
export const transferWorkflowId = transferWorkflowIds.id;
/** `cycle-count-cc_…`. */
export const cycleCountWorkflowIds = workflowIds('cycle-count');
export const cycleCountWorkflowId = cycleCountWorkflowIds.id;

export type { CycleCountView, TransferView };

/**
 * Database steps: refusals (4xx) are not retried (also listed here); outages are, without an
 * attempt limit on purpose: giving up would leave stock reserved or in transit with nobody to finish
 * the movement; it resumes when the database is back. The steps heartbeat while they run, so a
 * worker killed in the middle of one is noticed within the heartbeat timeout and the step runs again
 * elsewhere (its transaction died with the worker: nothing was half-applied).
 */
export const DB_STEPS = {
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '4 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: [...REFUSAL_TYPES] },
} satisfies ActivityOptions;

export interface ScopeRef {
  accountId: string;
  livemode: boolean;
}

/** Who asks and for which request: recorded on the ledger's movements. */
export interface Actor {
  requestId: string | null;
  /** `key:<api key id>` or `admin:<operator>`. */
  actor: string;
}

export interface TransferItem {
  sku: string;
  quantity: number;
}

/** A transfer as the API checked it: the workflow's input; its first activity reserves and writes the row. */
export interface TransferDraft extends ScopeRef, Actor {
  transferId: string;
  reference: string;
  fromWarehouse: string;
  toWarehouse: string;
  items: TransferItem[];
  /** `YYYY-MM-DD`: the transfer counts as delayed once this day (UTC) ends without a full receipt. */
  expectedArrival: string | null;
  carrier: string | null;
  /** Sandbox: the transfer's own frozen clock starts here (epoch ms) and moves only by `advanceTestClock`. */
  testClockStart?: number | null;
}

export interface TransferRef extends ScopeRef {
  transferId: string;
}

export interface TransferState {
  status: TransferView['status'] | 'creating';
  items: { sku: string; quantity: number; received: number }[];
  delayed: boolean;
}

export interface ReceiveInput extends Actor {
  receiptId: string;
  items: TransferItem[];
}

export interface CancelInput extends Actor {
  reason: string | null;
}

export const transferCreatedUpdate = defineUpdate<TransferView, []>('transferCreated');
export const dispatchTransferUpdate = defineUpdate<TransferView, [Actor]>('dispatchTransfer');
export const receiveTransferUpdate = defineUpdate<TransferView, [ReceiveInput]>('receiveTransfer');
export const cancelTransferUpdate = defineUpdate<TransferView, [CancelInput]>('cancelTransfer');
/** Sandbox: moves the transfer's test clock to `to` (epoch ms); answers once the delay check ran on the new time. */
export const advanceTransferClockUpdate = defineUpdate<void, [{ to: number }]>('advanceTestClock');
export const transferStateQuery = defineQuery<TransferState>('transferState');

export interface AbcPolicy {
  /** Days between counts of class A, B and C SKUs. */
  a_days: number;
  b_days: number;
  c_days: number;
}

export interface CycleCountDraft extends ScopeRef, Actor {
  countId: string;
  warehouseId: string;
  countType: CycleCountView['count_type'];
  skus: string[];
  tolerancePercent: number;
  toleranceValue: number;
  abc: AbcPolicy;
  /** ISO timestamp: an unfinished count is escalated (`cycle_count.overdue`) then. */
  deadline: string;
  /** Sandbox: the count's own frozen clock starts here (epoch ms) and moves only by `advanceTestClock`. */
  testClockStart?: number | null;
}

export interface CycleCountRef extends ScopeRef {
  countId: string;
}

export interface CycleCountState {
  status: CycleCountView['status'] | 'creating';
  skus: string[];
  counted: number;
  overdue: boolean;
}

export interface RecordCountsInput extends Actor {
  counts: { sku: string; quantity: number }[];
}

export interface ApproveInput extends Actor {
  note: string | null;
}

export interface CloseInput extends Actor {
  /** `force_close` posts the lines counted so far; `abort` posts nothing. */
  mode: 'force_close' | 'abort';
  reason: string;
}

export const cycleCountCreatedUpdate = defineUpdate<CycleCountView, []>('cycleCountCreated');
export const recordCountsUpdate = defineUpdate<CycleCountView, [RecordCountsInput]>('recordCounts');
export const approveCycleCountUpdate = defineUpdate<CycleCountView, [ApproveInput]>('approveCycleCount');
export const closeCycleCountUpdate = defineUpdate<CycleCountView, [CloseInput]>('closeCycleCount');
/** Sandbox: moves the count's test clock to `to` (epoch ms); answers once the deadline check ran on the new time. */
export const advanceCycleCountClockUpdate = defineUpdate<void, [{ to: number }]>('advanceTestClock');
export const cycleCountStateQuery = defineQuery<CycleCountState>('cycleCountState');
