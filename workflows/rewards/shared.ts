/**
 * What crosses the layers for rewards: workflow ids, message definitions and input types. Pure:
 * no Node, ORM or activity imports, since the workflows import it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { z } from 'zod';
import type { grantSchema, ledgerEntrySchema, tierChangeSchema } from '../../domain/rewards/schemas.ts';
import { workflowIds } from '../kit/ids.ts';

export const REWARDS_AREA = 'rewards';

/** `loyalty-cus_…`: one per customer, holding the timers of its grants (availability, expiry) and tier reviews. */
export const loyaltyWorkflowId = workflowIds('loyalty').id;
/** `loyalty-event-evt_…`: what one order or payment event does to a customer's points (once per event). */
export const loyaltyEventWorkflowId = workflowIds('loyalty-event').id;

export type GrantView = z.output<typeof grantSchema>;
export type LedgerEntryView = z.output<typeof ledgerEntrySchema>;
export type TierChangeView = z.output<typeof tierChangeSchema>;

export interface LoyaltyRef {
  accountId: string;
  livemode: boolean;
  customerId: string;
}

export interface LoyaltyWorkflowInput extends LoyaltyRef {
  /** The program's test clock (ms) when it has one: the workflow runs on it instead of timers. */
  clockNow: number | null;
  /** Carried over by continue-as-new. */
  nextDueAt?: number | null;
}

/** An award as the workflow passes it to its activity (see domain/rewards/ledger.ts AwardInput). */
export interface AwardRequest {
  grantId: string;
  source: 'award' | 'order';
  points: number;
  multiplier: number;
  reason: string;
  orderId: string | null;
  paymentId: string | null;
  orderAmount: number | null;
  currency: string | null;
  expiresAt: number | null;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
  at: number;
  clockNow: number | null;
}

export interface ReversalRequest {
  orderId: string | null;
  paymentId: string | null;
  share: { part: number; whole: number } | 'all';
  reason: string;
  at: number;
  requestId: string | null;
  clockNow: number | null;
}

export interface AdjustmentRequest {
  adjustmentId: string;
  points: number;
  reason: string;
  operator: string;
  at: number;
  clockNow: number | null;
}

export interface LoyaltyProgress {
  clockNow: number | null;
  nextDueAt: number | null;
  /** Timed changes made by this run. */
  processed: number;
  /** The time everything due has been processed up to (ms). */
  caughtUpTo: number;
}

export const awardPointsUpdate = defineUpdate<{ grant: GrantView; duplicate: boolean }, [AwardRequest]>('awardPoints');
export const reversePointsUpdate = defineUpdate<LedgerEntryView[], [ReversalRequest]>('reversePoints');
export const adjustPointsUpdate = defineUpdate<LedgerEntryView, [AdjustmentRequest]>('adjustPoints');
export const reevaluateTierUpdate = defineUpdate<TierChangeView | null, [{ at: number; clockNow: number | null }]>('reevaluateTier');
/** Sandbox: the program's clock moved; answers once everything due up to `now` has run. */
export const advanceClockUpdate = defineUpdate<LoyaltyProgress, [{ now: number }]>('advanceLoyaltyClock');
export const loyaltyProgressQuery = defineQuery<LoyaltyProgress>('loyaltyProgress');

/** What the order-event workflow does for one outbox event. */
export interface OrderEventInput {
  eventId: string;
  accountId: string;
  livemode: boolean;
  customerId: string;
  action: 'earn' | 'reverse';
  orderId: string | null;
  paymentId: string | null;
  amount: number;
  currency: string;
  /** For a refund: minor units refunded so far (cumulative); null: reverse everything (cancellation). */
  amountRefunded: number | null;
  reason: string;
  requestId: string | null;
}
