/**
 * What crosses the layers for the payments area: pure (no Node, ORM or activity imports), since
 * workflows import it. Card data here is only ever the gateway token, brand, last4 and expiry.
 */
import { defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type { z } from 'zod';
import type { PaymentRouting, paymentSchema, refundSchema, transferSchema } from '../../domain/payments/schemas.ts';
import type { CardOnFile } from '../../domain/payments/cards.ts';
import type { GatewayName } from '../../domain/payments/gateways/types.ts';
import { workflowIds } from '../kit/ids.ts';

/** `payment-pay_…`. */
export const paymentWorkflowId = workflowIds('payment').id;
/** `refund-re_…`. */
export const refundWorkflowId = workflowIds('refund').id;

/** Gateway idempotency keys, derived from our own ids so every retry reaches the gateway as the same call. */
export const gatewayKeys = {
  charge: (paymentId: string) => `${paymentId}:charge`,
  refund: (refundId: string) => `${refundId}:refund`,
  transfer: (transferId: string) => `${transferId}:transfer`,
  reversal: (transferId: string) => `${transferId}:reversal`,
};

export interface SplitTransferPlan {
  id: string;
  destination: string;
  amount: number;
}

/** The payment workflow's signature, for areas that run it as a child (billing's collections). */
export type PaymentWorkflow = (input: PaymentWorkflowInput) => Promise<PaymentView>;

export interface PaymentWorkflowInput {
  paymentId: string;
  accountId: string;
  livemode: boolean;
  kind: 'charge' | 'marketplace_split';
  amount: number;
  currency: string;
  gateway: GatewayName;
  /** The card charged; null when the payment is funded by the platform balance. */
  card: CardOnFile | null;
  /**
   * What pays (absent in histories from before it: `card`). `platform_balance` (marketplace splits
   * only): nothing is charged, the transfers are paid out of the account's gateway balance.
   */
  funding?: 'card' | 'platform_balance';
  customerId: string | null;
  description: string | null;
  fraudProtection: boolean;
  metadata: Record<string, string>;
  /** The request's Idempotency-Key: a payment is made once per key, even across API crashes. */
  requestIdempotencyKey: string | null;
  requestId: string | null;
  /** How the gateway was chosen (shown on the payment). */
  routing?: PaymentRouting;
  split?: {
    requestedFee: number;
    platformFee: number;
    roundingRemainder: number;
    transfers: SplitTransferPlan[];
    /** Used if a transfer fails: the charge is refunded under this refund id. */
    compensationRefundId: string;
  };
}

/** The Transfer, Payment and Refund resources: inferred from their schemas (domain/payments/schemas.ts). */
export type TransferView = z.output<typeof transferSchema>;
export type PaymentView = z.output<typeof paymentSchema>;
export type RefundView = z.output<typeof refundSchema>;

export interface RefundWorkflowInput {
  refundId: string;
  paymentId: string;
  accountId: string;
  livemode: boolean;
  /** Minor units; null refunds everything that remains. */
  amount: number | null;
  reason: string | null;
  metadata: Record<string, string>;
  requestId: string | null;
  /** The request's Idempotency-Key: one refund per key, even across API crashes. */
  requestIdempotencyKey: string | null;
}

export type RefundOutcome =
  | { accepted: true; refund: RefundView }
  | { accepted: false; code: 'payment_not_refundable' | 'refund_exceeds_remaining' | 'payment_not_found'; message: string; remaining: number | null };

/**
 * Sent with the workflow start (update-with-start): answers once the payment row is written and
 * then either the outcome is known or `waitMs` has passed, whichever comes first.
 */
export const awaitPaymentOutcomeUpdate = defineUpdate<PaymentView, [{ waitMs: number }]>('awaitPaymentOutcome');
export const awaitRefundOutcomeUpdate = defineUpdate<RefundOutcome, [{ waitMs: number }]>('awaitRefundOutcome');

/** Activity options of the payment and refund workflows' database steps: short, retried quickly. */
/**
 * Activity options of database steps. A refusal (a 4xx ApiError) is not retried: the workers'
 * activity interceptor makes it non-retryable (worker/activity-refusals.ts). No attempt limit
 * otherwise, on purpose: what is retried is an outage, and giving up would leave a payment or refund
 * `processing` (money possibly moved at the gateway) with nobody to record its outcome; it resumes
 * when the database is back. The gateway steps below are bounded by their 24 h schedule-to-close.
 */
export const DB_STEPS = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
} satisfies ActivityOptions;

/**
 * Activity options of gateway steps: an outage keeps the payment or refund `processing` while the
 * call is retried with exponential backoff (1 s doubling to 5 min) for up to a day; every retry
 * carries the same gateway idempotency key. The heartbeat timeout notices a worker that died mid-call.
 */
export const GATEWAY_STEPS = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5 seconds',
  scheduleToCloseTimeout: '24 hours',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
} satisfies ActivityOptions;
