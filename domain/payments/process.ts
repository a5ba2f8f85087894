import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { failureToProblem, searchAttributes, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { paymentWorkflow } from '../../workflows/payments/payment.ts';
import type { refundWorkflow } from '../../workflows/payments/refund.ts';
import {
  awaitPaymentOutcomeUpdate, awaitRefundOutcomeUpdate, paymentWorkflowId, refundWorkflowId,
  type PaymentView, type PaymentWorkflowInput, type RefundOutcome, type RefundWorkflowInput,
} from '../../workflows/payments/shared.ts';
import { checkCustomers } from '../customers/public.ts';
import type { Scope } from '../scope.ts';
import { cardBrand, type CardInput, type CardOnFile } from './cards.ts';
import { routePayment, tokenizeWithFailover } from './routing.ts';
import type { PaymentRouting } from './schemas.ts';
import type { PaymentGateways } from './gateways/index.ts';
import { stripeAmountProblem } from './gateways/stripe-amounts.ts';
import { CardRejectedError, GatewayRejectedError, GatewayUnavailableError, type GatewayName } from './gateways/types.ts';
import { findPaymentByRequestKey, gatewayFor, getPayment, paymentForRefund } from './service.ts';
import { planSplit, type SplitInput, type SplitPlan } from './split.ts';

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
  /** Customers' default saved cards (provided by billing, which keeps cards on file); none without it. */
  savedCards?: SavedCards | undefined;
}

/**
 * Where a customer's default saved card comes from. Payments keeps no cards; billing does (the card
 * on file of a subscription) and provides this through its descriptor's services (`savedCards`).
 */
export interface SavedCards {
  /** The customer's default card, in the em's account and mode; null when it has none. */
  defaultCard(em: EntityManager, customerId: string): Promise<CardOnFile | null>;
}

/** The gateway a card token belongs to (a token can only be charged through its own gateway). */
export function tokenGateway(token: string): GatewayName | null {
  if (token.startsWith('tok_sandbox_')) return 'sandbox';
  if (token.startsWith('pm_')) return 'stripe';
  return null;
}

export type ChargeInput = Pick<
  PaymentWorkflowInput,
  'amount' | 'currency' | 'customerId' | 'description' | 'fraudProtection' | 'metadata' | 'requestIdempotencyKey' | 'requestId'
>;

/**
 * The gateway for a payment of this scope. Live mode fails closed: with no live gateway configured,
 * or one that is not usable here, nothing is charged and the answer is 503 `gateway_not_configured`.
 */
export async function chooseGateway(ctx: PaymentsContext, scope: Scope): Promise<GatewayName> {
  const name = await gatewayFor(ctx.em, ctx.gateways, scope);
  const refuse = (detail: string, suggestion: string) => new ApiError({
    status: 503, code: 'gateway_not_configured', title: 'Service Unavailable', detail, suggestion,
    headers: { 'Retry-After': '60' },
  });
  if (name === null) {
    throw refuse('No live payment gateway is configured on this server, so live payments cannot be taken; nothing was charged.',
      'Set STRIPE_API_KEY on the server (or choose a gateway for the account), then retry.');
  }
  if (name === 'stripe' && !ctx.gateways.stripe) {
    throw refuse('This account\'s live payments go through Stripe, which is not configured on this server; nothing was charged.',
      'Set STRIPE_API_KEY on the server, then retry.');
  }
  if (!ctx.gateways.configured(name)) {
    throw refuse(`This account's live payments go through ${name}, which is not configured on this server; nothing was charged.`,
      `Configure the ${name} gateway on the server (see the README's payment settings), then retry.`);
  }
  if (name === 'sandbox' && scope.livemode && !ctx.gateways.liveSandboxAllowed) {
    throw refuse('This account\'s live payments are set to the sandbox gateway, which moves no money and serves live mode only on development servers; nothing was charged.',
      'Choose the stripe gateway for the account (admin payments.setLiveGateway), or on a development server set PAYMENTS_LIVE_SANDBOX=true.');
  }
  return name;
}

/**
 * Amounts the gateway would refuse, as field errors (Stripe: HUF and TWD in whole units only), so the
 * API answers 422 before anything is tokenized or charged.
 */
function gatewayAmountProblems(gateway: GatewayName, currency: string, amounts: readonly (readonly [string, number])[]): FieldError[] {
  if (gateway !== 'stripe') return [];
  return amounts.flatMap(([path, amount]) => stripeAmountProblem(currency, amount, path) ?? []);
}

/** The only place a full card number is handled: handed to the gateway, a token comes back. */
export async function tokenize(ctx: PaymentsContext, gateway: GatewayName, card: CardInput): Promise<CardOnFile> {
  try {
    return await ctx.gateways.get(gateway).tokenizeCard(card);
  } catch (err) {
    throw tokenizeProblem(err);
  }
}

/** A tokenization failure as the API's answer (402 declined, 422 invalid, 503 unreachable). */
function tokenizeProblem(err: unknown): unknown {
  if (err instanceof CardRejectedError) return cardDeclined(err.declineCode, err.message, null);
  if (err instanceof GatewayRejectedError) {
    return new ApiError({
      status: 422, code: 'card_invalid', title: 'Card Invalid', detail: err.message,
      suggestion: 'Check the card details and try again.', errors: [{ path: 'payment_method.card', message: err.message }],
    });
  }
  if (err instanceof GatewayUnavailableError) return gatewayUnavailable();
  return err;
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
  try {
    return await startResource<typeof paymentWorkflow, PaymentView, [{ waitMs: number }]>(ctx.temporal, {
      workflowType: 'paymentWorkflow',
      workflowId: paymentWorkflowId(input.paymentId),
      taskQueue: ctx.temporal.taskQueue('payments'),
      args: [input],
      searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: input.customerId, resourceId: input.paymentId, status: 'processing' }),
      update: awaitPaymentOutcomeUpdate,
      updateArgs: [{ waitMs: ctx.waitMs }],
      resultAnswersUpdate: true,
    });
  } catch (err) {
    // Another request (same Idempotency-Key, after a crash) recorded this payment first.
    if (err instanceof WorkflowUpdateFailedError && input.requestIdempotencyKey) {
      const existing = await findPaymentByRequestKey(ctx.em.fork(), input.requestIdempotencyKey);
      if (existing) return existing;
    }
    throw (await failureToProblem(err, {
      resource: `Payment ${input.paymentId}`,
      suggestion: 'Retry with the same Idempotency-Key to get the payment that was recorded.',
      currentState: async () => 'processing',
    })) ?? err;
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
  // Routing rules first (domain/payments/routing.ts); without a matching rule, the account's gateway.
  const decision = await routePayment(ctx.em, ctx.gateways, scope, { currency: input.currency, amount: input.amount, brand: cardBrand(card.number) })
    ?? { candidates: [await chooseGateway(ctx, scope)], ruleId: null, reason: scope.livemode ? 'the account\'s live gateway (no routing rule matched)' : 'test mode: the sandbox (no routing rule matched)' };
  const amountProblems = decision.candidates.flatMap((g) => gatewayAmountProblems(g, input.currency, [['amount', input.amount]]));
  if (amountProblems.length) throw validationFailed(amountProblems.slice(0, 1));
  let routed;
  try {
    routed = await tokenizeWithFailover(ctx.gateways, decision, card);
  } catch (err) {
    throw err instanceof ApiError ? err : tokenizeProblem(err);
  }
  return chargeCardOnFile(ctx, scope, routed.gateway, routed.onFile, input, undefined, routed.routing);
}

/** A marketplace split's charge: the amount and currency come from `split`. */
export interface SplitChargeInput extends Omit<ChargeInput, 'amount' | 'currency'> {
  split: SplitInput;
}

/**
 * A marketplace split: funded by a charge, then paid out to the split's destinations (the workflow
 * makes the transfers). What pays, in order: the card given (`card`); else the default saved card
 * of `customerId`, when it has one; else the platform's gateway balance (no charge: the transfers
 * are paid out of it and the platform keeps the fee; 402 `balance_insufficient` when it is short).
 * The split is planned exactly first (422 naming every bad field, before anything is charged); the
 * same `requestIdempotencyKey` returns the first payment; customer destinations must exist, and
 * Stripe pays connected accounts (acct_…) only.
 */
export async function processSplitPayment(ctx: PaymentsContext, scope: Scope, card: CardInput | null, input: SplitChargeInput): Promise<PaymentView> {
  const planned = planSplit(input.split);
  if ('errors' in planned) throw validationFailed(planned.errors);
  if (input.requestIdempotencyKey) {
    const existing = await findPaymentByRequestKey(ctx.em, input.requestIdempotencyKey);
    if (existing) return existing;
  }
  const destinations = input.split.splits;
  const customers: [string, string][] = destinations.flatMap((s, i) => (s.destination.startsWith('cus_') ? [[`splits.${i}.destination`, s.destination] as [string, string]] : []));
  if (input.customerId) customers.push(['customer_id', input.customerId]);
  const errors = await checkCustomers(ctx.em, customers);
  const gateway = await chooseGateway(ctx, scope);
  if (gateway === 'stripe') {
    destinations.forEach((s, i) => {
      if (s.destination.startsWith('cus_')) errors.push({ path: `splits.${i}.destination`, message: 'Stripe transfers go to connected accounts (acct_…) only' });
    });
  }
  errors.push(...gatewayAmountProblems(gateway, input.split.currency, [
    ['total_amount', planned.plan.total],
    ...planned.plan.transfers.map((t, i) => [`splits.${i}`, t.amount] as const),
  ]));
  if (errors.length) throw validationFailed(errors);
  const { split, ...charge } = input;
  const chargeInput = { ...charge, amount: planned.plan.total, currency: split.currency };
  if (card) return chargeCardOnFile(ctx, scope, gateway, await tokenize(ctx, gateway, card), chargeInput, planned.plan);
  const saved = input.customerId && ctx.savedCards ? await ctx.savedCards.defaultCard(ctx.em, input.customerId) : null;
  if (saved && tokenGateway(saved.token) === gateway) return chargeCardOnFile(ctx, scope, gateway, saved, chargeInput, planned.plan);
  return startPaymentWorkflow(ctx, scope, paymentInput(scope, gateway, null, chargeInput, planned.plan));
}

function paymentInput(scope: Scope, gateway: GatewayName, card: CardOnFile | null, input: ChargeInput, split?: SplitPlan, routing?: PaymentRouting): PaymentWorkflowInput {
  return {
    paymentId: newId('payment'),
    accountId: scope.accountId,
    livemode: scope.livemode,
    kind: split ? 'marketplace_split' : 'charge',
    amount: input.amount,
    currency: input.currency,
    gateway,
    card,
    funding: card ? 'card' : 'platform_balance',
    customerId: input.customerId,
    description: input.description,
    fraudProtection: input.fraudProtection,
    metadata: input.metadata,
    requestIdempotencyKey: input.requestIdempotencyKey,
    requestId: input.requestId,
    ...(routing ? { routing } : {}),
    ...(split ? {
      split: {
        requestedFee: split.requestedFee,
        platformFee: split.platformFee,
        roundingRemainder: split.roundingRemainder,
        transfers: split.transfers.map((t) => ({ id: newId('transfer'), destination: t.destination, amount: t.amount })),
        compensationRefundId: newId('refund'),
      },
    } : {}),
  };
}

/** Charges a card that is already tokenized (billing's saved cards go through here). */
export async function chargeCardOnFile(
  ctx: PaymentsContext, scope: Scope, gateway: GatewayName, card: CardOnFile, input: ChargeInput, split?: SplitPlan, routing?: PaymentRouting,
): Promise<PaymentView> {
  const amountProblems = gatewayAmountProblems(gateway, input.currency, [['amount', input.amount]]);
  if (amountProblems.length) throw validationFailed(amountProblems);
  return startPaymentWorkflow(ctx, scope, paymentInput(scope, gateway, card, input, split, routing));
}

export async function refundPayment(
  ctx: PaymentsContext, scope: Scope, paymentId: string,
  input: { amount: number | null; reason: string | null; metadata: Record<string, string>; requestId: string | null; requestIdempotencyKey: string | null },
): Promise<RefundOutcome> {
  const payment = await paymentForRefund(ctx.em, paymentId); // 404 for an unknown payment (or another account's)
  if (input.amount !== null) {
    const amountProblems = gatewayAmountProblems(payment.gateway as GatewayName, payment.currency, [['amount', input.amount]]);
    if (amountProblems.length) throw validationFailed(amountProblems);
  }
  const refundId = newId('refund');
  const workflowInput: RefundWorkflowInput = {
    refundId, paymentId, accountId: scope.accountId, livemode: scope.livemode, amount: input.amount, reason: input.reason,
    metadata: input.metadata, requestId: input.requestId, requestIdempotencyKey: input.requestIdempotencyKey,
  };
  return startResource<typeof refundWorkflow, RefundOutcome, [{ waitMs: number }]>(ctx.temporal, {
    workflowType: 'refundWorkflow',
    workflowId: refundWorkflowId(refundId),
    taskQueue: ctx.temporal.taskQueue('payments'),
    args: [workflowInput],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: refundId }),
    update: awaitRefundOutcomeUpdate,
    updateArgs: [{ waitMs: ctx.waitMs }],
    resultAnswersUpdate: true,
  });
}

export { getPayment };
