/**
 * What crosses the layers for billing: workflow ids, message definitions, input and state types,
 * and the pure period / proration arithmetic the workflow and the services share. Pure: no Node,
 * ORM or activity imports, since the workflow imports it.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { z } from 'zod';
import type { invoiceSchema, subscriptionSchema } from '../../domain/billing/schemas.ts';
import { divideHalfEven } from '../../domain/money.ts';
import type { CardOnFile, GatewayName } from '../../domain/payments/public.ts';
import { workflowIds } from '../kit/ids.ts';

/** `subscription-sub_…`. */
export const subscriptionWorkflowId = workflowIds('subscription').id;

export const INTERVALS = ['monthly', 'quarterly', 'yearly'] as const;
export type Interval = (typeof INTERVALS)[number];
export const BILLING_CYCLES = ['monthly', 'quarterly', 'yearly', 'usage_based'] as const;
export type BillingCycle = (typeof BILLING_CYCLES)[number];
export const SUBSCRIPTION_STATUSES = ['trialing', 'active', 'paused', 'past_due', 'unpaid', 'canceled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export interface UsageTier {
  /** Inclusive upper bound of the tier in units; null for the last tier. */
  up_to: number | null;
  /** Minor units per unit (may carry up to 6 decimals; each line is rounded half-even). */
  unit_amount: string;
}
export interface UsagePricing {
  metric_name: string;
  unit_amount: string;
  tiers: UsageTier[] | null;
}
export interface DunningPolicy {
  /** Days after the failed attempt (then after each further failure) when collection is retried. */
  retry_schedule_days: number[];
  /** What happens after the last retry fails. */
  final_action: 'cancel' | 'unpaid';
}
export const DEFAULT_DUNNING: DunningPolicy = { retry_schedule_days: [3, 5, 7], final_action: 'cancel' };

/** What the workflow needs of a plan (a snapshot: later edits of the plan do not reach running periods). */
export interface PlanSnapshot {
  id: string;
  name: string;
  currency: string;
  amount: number;
  interval: Interval;
  usage: UsagePricing | null;
  dunning: DunningPolicy;
}

export interface SubscriptionWorkflowInput {
  subscriptionId: string;
  accountId: string;
  livemode: boolean;
  customerId: string;
  plan: PlanSnapshot;
  billingCycle: BillingCycle;
  autoCollection: boolean;
  daysUntilDue: number;
  trialPeriodDays: number;
  taxJurisdiction: string | null;
  /** The card for auto collection, tokenized before the workflow started (never the number). */
  card: CardOnFile | null;
  gateway: GatewayName | null;
  testClockId: string | null;
  /** Creation time (ms): the test clock's frozen time, or the request's time. */
  startAt: number;
  metadata: Record<string, string>;
  /** The payments area's task queue (collections run the payment workflow there as a child). */
  paymentsTaskQueue: string;
  /** Continue-as-new after this many billing cycles in one run. */
  cyclesPerRun: number;
  requestId: string | null;
  /** Set when the workflow continues as new: everything it had. */
  state?: SubscriptionState;
}

export interface ProrationItem {
  description: string;
  amount: number;
  period_start: number;
  period_end: number;
}

export interface SubscriptionState {
  status: SubscriptionStatus;
  /** The status to return to on resume. */
  statusBeforePause: SubscriptionStatus | null;
  plan: PlanSnapshot;
  /** Billing anchor (ms): period k ends at anchor + k intervals (calendar months, day clamped). */
  anchor: number;
  /** Index of the current period since the anchor (period k is [end(k-1), end(k))). */
  periodIndex: number;
  periodStart: number;
  periodEnd: number;
  trialEnd: number | null;
  cancelAtPeriodEnd: boolean;
  canceledAt: number | null;
  /** The Idempotency-Key of the request that canceled it (or asked to at the period end). */
  canceledBy?: string | null;
  /**
   * The Idempotency-Keys of the latest requests that applied a pause, resume or plan change (newest
   * last, at most APPLIED_KEYS_KEPT): a retry of one of them (its answer was lost) answers the
   * subscription again instead of applying the change twice or answering 409. Absent in older states.
   */
  appliedBy?: { change: AppliedChange; key: string }[];
  pausedAt: number | null;
  resumesAt: number | null;
  /** Open invoices that failed collection, retried on the dunning schedule. */
  dunning: { invoiceIds: string[]; retry: number; nextRetryAt: number } | null;
  pendingProrations: ProrationItem[];
  /** The card collections charge (replaceable while the subscription runs, e.g. during dunning). */
  card: CardOnFile | null;
  gateway: GatewayName | null;
  /** For test clocks: the clock's time as last signalled. */
  clockNow: number;
  /** Monotonic write version of the subscription row. */
  version: number;
  cyclesTotal: number;
  runs: number;
}

/** The Subscription and Invoice resources: inferred from their schemas (domain/billing/schemas.ts). */
export type SubscriptionView = z.output<typeof subscriptionSchema>;
export type InvoiceView = z.output<typeof invoiceSchema>;
export type InvoiceLineItem = InvoiceView['line_items'][number];

/** The row as the workflow sees it; the activity writes it (with an event) only if `version` is newer. */
export interface SubscriptionSnapshot {
  subscriptionId: string;
  accountId: string;
  livemode: boolean;
  customerId: string;
  planId: string;
  billingCycle: BillingCycle;
  autoCollection: boolean;
  daysUntilDue: number;
  taxJurisdiction: string | null;
  testClockId: string | null;
  card: CardOnFile | null;
  /** The gateway that tokenised `card` (absent in histories from before it was kept on the row). */
  gateway?: GatewayName | null;
  metadata: Record<string, string>;
  status: SubscriptionStatus;
  trialEnd: number | null;
  periodStart: number;
  periodEnd: number;
  nextInvoiceAt: number | null;
  cancelAtPeriodEnd: boolean;
  canceledAt: number | null;
  pausedAt: number | null;
  resumesAt: number | null;
  version: number;
  createdAt: number;
  /** Timestamp of the change (the clock's time for test-clock subscriptions). */
  at: number;
  event: 'subscription.created' | 'subscription.paused' | 'subscription.resumed' | 'subscription.canceled' | null;
  requestId: string | null;
}

export type TransitionResult = SubscriptionView;

/** Answers once the subscription row is written (sent with the workflow start). */
export const awaitSubscriptionRecordedUpdate = defineUpdate<SubscriptionView, []>('awaitSubscriptionRecorded');
/** The changes whose applying request is remembered (`SubscriptionState.appliedBy`). */
export type AppliedChange = 'pause' | 'resume' | 'changePlan';
/** How many applying requests' keys the state keeps (the oldest are forgotten). */
export const APPLIED_KEYS_KEPT = 20;

/**
 * `idempotencyKey` (optional in each): the request's Idempotency-Key, remembered once the change is
 * applied, so a retry of that request (its answer was lost: the API died) answers the subscription
 * as it is, not 409, and never applies the change twice.
 */
export const pauseSubscriptionUpdate = defineUpdate<SubscriptionView, [{ resumesAt: number | null; requestId: string | null; idempotencyKey?: string | null }]>('pauseSubscription');
export const resumeSubscriptionUpdate = defineUpdate<SubscriptionView, [{ requestId: string | null; idempotencyKey?: string | null }]>('resumeSubscription');
export const cancelSubscriptionUpdate = defineUpdate<SubscriptionView, [{
  atPeriodEnd: boolean; requestId: string | null;
  /** The request's Idempotency-Key: kept as `canceledBy`, so a retry of the cancel after a lost answer succeeds. */
  idempotencyKey?: string | null;
}]>('cancelSubscription');
export const changePlanUpdate = defineUpdate<SubscriptionView, [{ plan: PlanSnapshot; prorate: boolean; requestId: string | null; idempotencyKey?: string | null }]>('changePlan');
/** A new card for collections (tokenized by the API first); the next attempt uses it. */
export const updatePaymentMethodUpdate = defineUpdate<SubscriptionView, [{ card: CardOnFile; gateway: GatewayName; requestId: string | null }]>('updatePaymentMethod');
/** Admin: retry a failed collection now instead of on the dunning schedule. */
export const retryCollectionUpdate = defineUpdate<{ retried: boolean; status: SubscriptionStatus }, []>('retryCollection');
/** The test clock moved: the workflow processes everything due up to `now`. */
export const advanceClockSignal = defineSignal<[{ now: number }]>('advanceClock');
export interface SubscriptionProgress {
  status: SubscriptionStatus;
  /** Everything due at or before this time (ms) has been processed. */
  caughtUpTo: number;
  state: SubscriptionState;
  collecting: boolean;
}
export const subscriptionProgressQuery = defineQuery<SubscriptionProgress>('subscriptionProgress');

/** Which transitions each update accepts, from each status. */
export const TRANSITIONS = {
  pause: ['trialing', 'active', 'past_due'],
  resume: ['paused'],
  cancel: ['trialing', 'active', 'paused', 'past_due', 'unpaid'],
  changePlan: ['trialing', 'active', 'past_due'],
  updatePaymentMethod: ['trialing', 'active', 'paused', 'past_due'],
} as const satisfies Record<string, readonly SubscriptionStatus[]>;

// ---- Pure arithmetic ----------------------------------------------------------------------

export const DAY_MS = 86_400_000;

export function monthsOf(cycle: BillingCycle | Interval): number {
  return cycle === 'quarterly' ? 3 : cycle === 'yearly' ? 12 : 1;
}

/** `anchor` plus `months` calendar months (UTC), the day clamped to the target month's length. */
export function addMonths(anchor: number, months: number): number {
  const d = new Date(anchor);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const targetY = y + Math.floor(m / 12);
  const targetM = ((m % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(targetY, targetM + 1, 0)).getUTCDate();
  return Date.UTC(targetY, targetM, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** End of period `index` (1-based) counted from the anchor. */
export function periodEndAt(anchor: number, cycle: BillingCycle, index: number): number {
  return addMonths(anchor, monthsOf(cycle) * index);
}

/** The share of `amount` for the `remainingMs` of a period of `totalMs`, rounded half-even. */
export function prorate(amount: number, remainingMs: number, totalMs: number): number {
  if (totalMs <= 0) return 0;
  return Number(divideHalfEven(BigInt(amount) * BigInt(Math.max(0, Math.min(remainingMs, totalMs))), BigInt(totalMs)));
}

export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
