import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, WorkflowIdReusePolicy, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { paymentWorkflow } from '../../workflows/payments/payment.ts';
import type { refundWorkflow } from '../../workflows/payments/refund.ts';
import {
  awaitPaymentOutcomeUpdate, awaitRefundOutcomeUpdate, paymentWorkflowId, refundWorkflowId,
  type PaymentView, type PaymentWorkflowInput, type RefundOutcome, type RefundWorkflowInput,
} from '../../workflows/payments/shared.ts';
import { Customer } from '../customers/entities.ts';
import type { Scope } from '../scope.ts';
import type { CardInput, CardOnFile } from './cards.ts';
import type { PaymentGateways } from './gateways/index.ts';
import { CardRejectedError, GatewayRejectedError, GatewayUnavailableError, type GatewayName } from './gateways/types.ts';
import { findPaymentByRequestKey, gatewayFor, getPayment, paymentForRefund } from './service.ts';
import type { SplitPlan } from './split.ts';

/**
 * Starting payments and refunds: the card is tokenized here, before any workflow exists, so the
 * full number and CVC never reach a workflow's input or history. The workflow is started together
 * with an update (update-with-start) that returns once the payment row is written, and then as
 * soon as the gateway has answered or `waitMs` has passed.
 */
export interface PaymentsContext {
  em: EntityManager;
  temporal: TemporalHandle;
  gateways: PaymentGateways;
  /** How long to wait for the outcome before answering with `processing`. */
  waitMs: number;
}

export interface ChargeInput {
  amount: number;
  currency: string;
  customerId: string | null;
  description: string | null;
  fraudProtection: boolean;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

function searchAttributes(scope: Scope, resourceId: string, customerId: string | null): Record<string, string[]> {
  return {
    BpAccountId: [scope.accountId],
    BpMode: [scope.livemode ? 'live' : 'test'],
    ...(customerId ? { BpCustomerId: [customerId] } : {}),
    BpResourceId: [resourceId],
  };
}

/** 422 for every customer id in `ids` (field path → id) that does not exist in this account and mode. */
export async function checkCustomers(em: EntityManager, ids: [string, string][]): Promise<FieldError[]> {
  if (!ids.length) return [];
  const found = await em.find(Customer, { id: { $in: ids.map(([, id]) => id) } }, { fields: ['id'] });
  const known = new Set(found.map((c) => c.id));
  return ids.filter(([, id]) => !known.has(id)).map(([path, id]) => ({ path, message: `no customer with id '${id}' exists in this account and mode` }));
}

export async function chooseGateway(ctx: PaymentsContext, scope: Scope): Promise<GatewayName> {
  const name = await gatewayFor(ctx.em, ctx.gateways, scope);
  if (name === 'stripe' && !ctx.gateways.stripe) {
    throw new ApiError({
      status: 503, code: 'gateway_not_configured', title: 'Service Unavailable',
      detail: 'This account\'s live payments go through Stripe, which is not configured on this server.',
      suggestion: 'Set STRIPE_API_KEY on the server, or choose the sandbox gateway for the account.',
      headers: { 'Retry-After': '60' },
    });
  }
  return name;
}

/** The only place a full card number is handled: handed to the gateway, a token comes back. */
export async function tokenize(ctx: PaymentsContext, gateway: GatewayName, card: CardInput): Promise<CardOnFile> {
  try {
    return await ctx.gateways.get(gateway).tokenizeCard(card);
  } catch (err) {
    if (err instanceof CardRejectedError) throw cardDeclined(err.declineCode, err.message, null);
    if (err instanceof GatewayRejectedError) {
      throw new ApiError({
        status: 422, code: 'card_invalid', title: 'Card Invalid', detail: err.message,
        suggestion: 'Check the card details and try again.', errors: [{ path: 'payment_method.card', message: err.message }],
      });
    }
    if (err instanceof GatewayUnavailableError) throw gatewayUnavailable();
    throw err;
  }
}

export function gatewayUnavailable(): ApiError {
  return new ApiError({
    status: 503, code: 'service_unavailable', title: 'Service Unavailable',
    detail: 'The payment gateway is unreachable right now; no payment was made.',
    suggestion: 'Retry after 5 seconds with the same Idempotency-Key.',
    headers: { 'Retry-After': '5' },
  });
}

export function cardDeclined(declineCode: string, message: string, payment: PaymentView | null, suggestion?: string): ApiError {
  return new ApiError({
    status: 402, code: 'card_declined', title: 'Card Declined',
    detail: message,
    suggestion: suggestion ?? 'Ask the customer for another payment method.',
    extensions: { decline_code: declineCode, ...(payment ? { payment_id: payment.id, payment } : {}) },
  });
}

async function startPaymentWorkflow(ctx: PaymentsContext, scope: Scope, input: PaymentWorkflowInput): Promise<PaymentView> {
  const workflowId = paymentWorkflowId(input.paymentId);
  const start = new WithStartWorkflowOperation<typeof paymentWorkflow>('paymentWorkflow', {
    workflowId,
    taskQueue: ctx.temporal.taskQueue('payments'),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    searchAttributes: searchAttributes(scope, input.paymentId, input.customerId),
  });
  try {
    return await ctx.temporal.client.workflow.executeUpdateWithStart(awaitPaymentOutcomeUpdate, {
      args: [{ waitMs: ctx.waitMs }], startWorkflowOperation: start,
    });
  } catch (err) {
    // Another request (same Idempotency-Key, after a crash) recorded this payment first.
    if (err instanceof WorkflowUpdateFailedError && input.requestIdempotencyKey) {
      const existing = await findPaymentByRequestKey(ctx.em.fork(), input.requestIdempotencyKey);
      if (existing) return existing;
    }
    throw err;
  }
}

/**
 * Charges a card once. With the same `requestIdempotencyKey` a second call returns the first
 * payment instead of charging again (also after an API crash, when the HTTP idempotency record
 * has lapsed).
 */
export async function processPayment(ctx: PaymentsContext, scope: Scope, card: CardInput, input: ChargeInput): Promise<PaymentView> {
  if (input.requestIdempotencyKey) {
    const existing = await findPaymentByRequestKey(ctx.em, input.requestIdempotencyKey);
    if (existing) return existing;
  }
  const missing = await checkCustomers(ctx.em, input.customerId ? [['customer_id', input.customerId]] : []);
  if (missing.length) throw validationFailed(missing);
  const gateway = await chooseGateway(ctx, scope);
  const onFile = await tokenize(ctx, gateway, card);
  return chargeCardOnFile(ctx, scope, gateway, onFile, input);
}

/** Charges a card that is already tokenized (billing's saved cards go through here). */
export async function chargeCardOnFile(
  ctx: PaymentsContext, scope: Scope, gateway: GatewayName, card: CardOnFile, input: ChargeInput, split?: SplitPlan,
): Promise<PaymentView> {
  const paymentId = newId('payment');
  return startPaymentWorkflow(ctx, scope, {
    paymentId,
    accountId: scope.accountId,
    livemode: scope.livemode,
    kind: split ? 'marketplace_split' : 'charge',
    amount: input.amount,
    currency: input.currency,
    gateway,
    card,
    customerId: input.customerId,
    description: input.description,
    fraudProtection: input.fraudProtection,
    metadata: input.metadata,
    requestIdempotencyKey: input.requestIdempotencyKey,
    requestId: input.requestId,
    ...(split ? {
      split: {
        requestedFee: split.requestedFee,
        platformFee: split.platformFee,
        roundingRemainder: split.roundingRemainder,
        transfers: split.transfers.map((t) => ({ id: newId('transfer'), destination: t.destination, amount: t.amount })),
        compensationRefundId: newId('refund'),
      },
    } : {}),
  });
}

/**
 * For billing: charge an invoice to a saved card. `attempt` makes each collection attempt its own
 * payment while a retried call of the same attempt never charges twice.
 */
export async function chargeForInvoice(
  ctx: PaymentsContext, scope: Scope,
  invoice: { invoiceId: string; attempt: number; amount: number; currency: string; customerId: string; card: CardOnFile; description?: string },
): Promise<PaymentView> {
  const gateway = await chooseGateway(ctx, scope);
  return chargeCardOnFile(ctx, scope, gateway, invoice.card, {
    amount: invoice.amount,
    currency: invoice.currency,
    customerId: invoice.customerId,
    description: invoice.description ?? `Invoice ${invoice.invoiceId}`,
    fraudProtection: false,
    metadata: { invoice_id: invoice.invoiceId },
    requestIdempotencyKey: `invoice:${invoice.invoiceId}:attempt:${invoice.attempt}`,
    requestId: null,
  });
}

export async function refundPayment(
  ctx: PaymentsContext, scope: Scope, paymentId: string,
  input: { amount: number | null; reason: string | null; metadata: Record<string, string>; requestId: string | null; requestIdempotencyKey: string | null },
): Promise<RefundOutcome> {
  await paymentForRefund(ctx.em, paymentId); // 404 for an unknown payment (or another account's)
  const refundId = newId('refund');
  const workflowInput: RefundWorkflowInput = {
    refundId, paymentId, accountId: scope.accountId, livemode: scope.livemode, amount: input.amount, reason: input.reason,
    metadata: input.metadata, requestId: input.requestId, requestIdempotencyKey: input.requestIdempotencyKey,
  };
  const start = new WithStartWorkflowOperation<typeof refundWorkflow>('refundWorkflow', {
    workflowId: refundWorkflowId(refundId),
    taskQueue: ctx.temporal.taskQueue('payments'),
    args: [workflowInput],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    searchAttributes: searchAttributes(scope, refundId, null),
  });
  return ctx.temporal.client.workflow.executeUpdateWithStart(awaitRefundOutcomeUpdate, {
    args: [{ waitMs: ctx.waitMs }], startWorkflowOperation: start,
  });
}

export { getPayment };
