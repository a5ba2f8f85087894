/**
 * What crosses the layers for the payments area: pure (no Node, ORM or activity imports), since
 * workflows import it. Card data here is only ever the gateway token, brand, last4 and expiry.
 */
import { defineUpdate } from '@temporalio/workflow';
import type { CardOnFile } from '../../domain/payments/cards.ts';
import type { GatewayName } from '../../domain/payments/gateways/types.ts';

export const PAYMENTS_QUEUE_AREA = 'payments';

export function paymentWorkflowId(paymentId: string): string {
  return `payment-${paymentId}`;
}
export function paymentIdFromWorkflowId(workflowId: string): string | null {
  return workflowId.startsWith('payment-') ? workflowId.slice('payment-'.length) : null;
}
export function refundWorkflowId(refundId: string): string {
  return `refund-${refundId}`;
}
export function refundIdFromWorkflowId(workflowId: string): string | null {
  return workflowId.startsWith('refund-') ? workflowId.slice('refund-'.length) : null;
}

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

export interface PaymentWorkflowInput {
  paymentId: string;
  accountId: string;
  livemode: boolean;
  kind: 'charge' | 'marketplace_split';
  amount: number;
  currency: string;
  gateway: GatewayName;
  card: CardOnFile;
  customerId: string | null;
  description: string | null;
  fraudProtection: boolean;
  metadata: Record<string, string>;
  /** The request's Idempotency-Key: a payment is made once per key, even across API crashes. */
  requestIdempotencyKey: string | null;
  requestId: string | null;
  split?: {
    requestedFee: number;
    platformFee: number;
    roundingRemainder: number;
    transfers: SplitTransferPlan[];
    /** Used if a transfer fails: the charge is refunded under this refund id. */
    compensationRefundId: string;
  };
}

export interface TransferView {
  id: string;
  object: 'transfer';
  destination: string;
  amount: number;
  currency: string;
  status: 'pending' | 'paid' | 'failed' | 'reversed' | 'canceled';
  failure: { code: string; message: string } | null;
}

/** The Payment status resource. */
export interface PaymentView {
  id: string;
  object: 'payment';
  livemode: boolean;
  status: 'processing' | 'succeeded' | 'failed' | 'partially_refunded' | 'refunded';
  amount: number;
  amount_refunded: number;
  currency: string;
  gateway: string;
  created: string;
  created_at: string;
  updated_at: string;
  customer_id: string | null;
  description: string | null;
  fraud_protection: boolean;
  payment_method: { type: 'card'; card: { brand: string; last4: string; exp_month: number; exp_year: number } };
  risk_score: number | null;
  settlement: { expected_date: string | null; fees: number | null };
  failure: { code: string; decline_code: string | null; message: string } | null;
  workflow_id: string;
  metadata: Record<string, string>;
  split?: {
    status: 'pending' | 'completed' | 'reversed' | 'canceled';
    platform_fee: number;
    rounding_remainder: number;
    transfers: TransferView[];
  };
}

export interface RefundView {
  id: string;
  object: 'refund';
  livemode: boolean;
  payment_id: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
  reason: string | null;
  failure_message: string | null;
  workflow_id: string | null;
  metadata: Record<string, string>;
  created_at: string;
}

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

/** Application failure types the payment activities raise (not retried by Temporal). */
export const PAYMENT_FAILURES = {
  gatewayRejected: 'GatewayRejected',
  duplicatePayment: 'DuplicatePayment',
} as const;
