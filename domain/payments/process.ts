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
import {
  matchRules, routePayment, savedCardRouting, unusableReason, tokenizeWithFailover, type GatewayFilter, type RoutedCard, type RoutingDecision, type RoutingFacts,
} from './routing.ts';
import type { PaymentRouting } from './schemas.ts';
import type { PaymentGateways } from './gateways/index.ts';
import { stripeAmountProblem } from './gateways/stripe-amounts.ts';
import {
  CardRejectedError, GatewayRejectedError, GatewayUnavailableError, gatewayMerchant, supportsTransfers, type GatewayName,
} from './gateways/types.ts';
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
  defaultCard(em: EntityManager, customerId: string): Promise<SavedCard | null>;
}

/** A card on file and the gateway that tokenised it (null: not recorded, a card saved before it was). */
export interface SavedCard {
  card: CardOnFile;
  gateway: GatewayName | null;
}

/**
 * The gateway a card token belongs to, guessed from its shape (a token can only be charged through its
 * own gateway): for cards saved before the tokenising gateway was recorded with them.
 */
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
    ?? await defaultDecision(ctx, scope);
  const amountProblems = decision.candidates.flatMap((g) => gatewayAmountProblems(g, input.currency, [['amount', input.amount]]));
  if (amountProblems.length) throw validationFailed(amountProblems.slice(0, 1));
  const routed = await tokenizeRouted(ctx, decision, card);
  return chargeCardOnFile(ctx, scope, routed.gateway, routed.onFile, input, undefined, routed.routing);
}

/** No routing rule matched: the account's gateway (test mode: the sandbox). */
async function defaultDecision(ctx: PaymentsContext, scope: Scope, passedOver: string[] = []): Promise<RoutingDecision> {
  const reason = scope.livemode ? 'the account\'s live gateway (no routing rule matched)' : 'test mode: the sandbox (no routing rule matched)';
  return { candidates: [await chooseGateway(ctx, scope)], ruleId: null, reason: passedOver.length ? `${reason}; passed over ${passedOver.join(', ')}` : reason };
}

/** Tokenizes with the decision's first gateway that is up (failover before any charge); failures as the API's answers. */
async function tokenizeRouted(ctx: PaymentsContext, decision: RoutingDecision, card: CardInput): Promise<RoutedCard> {
  try {
    return await tokenizeWithFailover(ctx.gateways, decision, card);
  } catch (err) {
    throw err instanceof ApiError ? err : tokenizeProblem(err);
  }
}

/**
 * Saves a card (billing's subscriptions): routed by the rules like a payment of `amount` in
 * `currency` would be (failover before any charge), and tokenized there. The gateway is kept with
 * the token: the card's charges can only go there.
 */
export async function tokenizeForSaving(ctx: PaymentsContext, scope: Scope, card: CardInput, facts: { currency: string; amount: number }): Promise<RoutedCard> {
  const decision = await routePayment(ctx.em, ctx.gateways, scope, { ...facts, brand: cardBrand(card.number) }) ?? await defaultDecision(ctx, scope);
  return tokenizeRouted(ctx, decision, card);
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
 *
 * Routing (routing.ts): the rules choose among the gateways that make transfers (the others are
 * skipped as `transfers_not_supported`; a matching rule with none is passed over); no rule: the
 * account's gateway, or 422 `transfers_not_supported` when it makes none. A card given is tokenized
 * with failover before any charge; a saved card is charged at the gateway that tokenised it (its
 * token is valid nowhere else), or refused (422) when that gateway makes no transfers.
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
  const { split, ...charge } = input;
  const chargeInput = { ...charge, amount: planned.plan.total, currency: split.currency };
  const saved = !card && input.customerId && ctx.savedCards && !errors.length ? await savedSplitCard(ctx, scope, input.customerId) : null;
  const facts: RoutingFacts = { currency: split.currency, amount: planned.plan.total, brand: card ? cardBrand(card.number) : saved?.card.brand ?? null };
  const decision = saved
    ? { candidates: [saved.gateway], ruleId: null, reason: '' }
    : await routeSplit(ctx, scope, facts);
  for (const gateway of decision.candidates) {
    if (gateway === 'stripe') {
      destinations.forEach((s, i) => {
        if (s.destination.startsWith('cus_')) errors.push({ path: `splits.${i}.destination`, message: 'Stripe transfers go to connected accounts (acct_…) only' });
      });
    }
    errors.push(...gatewayAmountProblems(gateway, split.currency, [
      ['total_amount', planned.plan.total],
      ...planned.plan.transfers.map((t, i) => [`splits.${i}`, t.amount] as const),
    ]));
  }
  if (errors.length) throw validationFailed(errors);
  if (saved) {
    const routing = await savedCardRouting(ctx.em, ctx.gateways, scope, facts, saved.gateway, transfersFilter);
    return chargeCardOnFile(ctx, scope, saved.gateway, saved.card, chargeInput, planned.plan, routing);
  }
  if (card) {
    const routed = await tokenizeRouted(ctx, decision, card);
    return chargeCardOnFile(ctx, scope, routed.gateway, routed.onFile, chargeInput, planned.plan, routed.routing);
  }
  const { gateway, routing } = await balanceGateway(ctx, scope, decision, split.currency);
  return startPaymentWorkflow(ctx, scope, paymentInput(scope, gateway, null, chargeInput, planned.plan, routing));
}

/**
 * A split funded by the platform balance goes to the first candidate that answers a balance
 * enquiry: a read, before anything moves, so a gateway that is down is failed over like a card's
 * tokenization is (the workflow checks the amount itself, at the gateway chosen). A single
 * candidate has nothing to fail over to: it is not asked here (the workflow waits for it).
 */
async function balanceGateway(ctx: PaymentsContext, scope: Scope, decision: RoutingDecision, currency: string): Promise<{ gateway: GatewayName; routing: PaymentRouting }> {
  const only = decision.candidates.length === 1 ? decision.candidates[0]! : null;
  if (only) return { gateway: only, routing: { rule_id: decision.ruleId, reason: `${decision.reason}; funded by the platform balance at ${only}`, failed_over: [] } };
  const failedOver: { gateway: string; message: string }[] = [];
  for (const gateway of decision.candidates) {
    try {
      await ctx.gateways.get(gateway).balance({ merchant: gatewayMerchant(scope), currency });
    } catch (err) {
      if (!(err instanceof GatewayUnavailableError)) throw err;
      failedOver.push({ gateway, message: err.message.slice(0, 300) });
      continue;
    }
    const reason = `${decision.reason}; funded by the platform balance at ${gateway}${failedOver.length ? `; failed over to ${gateway}` : ''}`;
    return { gateway, routing: { rule_id: decision.ruleId, reason, failed_over: failedOver } };
  }
  throw new ApiError({
    status: 503, code: 'service_unavailable', title: 'Service Unavailable',
    detail: `Every gateway the routing chose is unreachable right now (${decision.candidates.join(', ')}); nothing was transferred.`,
    suggestion: 'Retry after 5 seconds with the same Idempotency-Key.', headers: { 'Retry-After': '5' },
  });
}

const transfersFilter: GatewayFilter = (g) => (supportsTransfers(g) ? null : 'transfers_not_supported');

/** The gateways for a split paid by a card given or the platform balance: the rules' among those that make transfers, else the account's. */
async function routeSplit(ctx: PaymentsContext, scope: Scope, facts: RoutingFacts): Promise<RoutingDecision> {
  const { decision, passedOver } = await matchRules(ctx.em, ctx.gateways, scope, facts, transfersFilter);
  if (decision) return decision;
  const fallback = await defaultDecision(ctx, scope, passedOver);
  const gateway = fallback.candidates[0]!;
  if (supportsTransfers(gateway)) return fallback;
  throw transfersNotSupported(
    `No gateway can make this split's transfers: ${[...passedOver, `the account's ${scope.livemode ? 'live ' : ''}gateway ${gateway}: transfers_not_supported`].join(', ')}. Nothing was charged.`,
    'Add a routing rule for marketplace splits that names a gateway with transfers (sandbox or stripe), or choose one as the account\'s gateway.',
  );
}

/**
 * The customer's default saved card for a split, with the gateway its token belongs to; null when it
 * has none (the platform balance pays), or when the gateway was not recorded and cannot be told
 * from the token (a card saved before it was: the balance pays, as it did then).
 */
async function savedSplitCard(ctx: PaymentsContext, scope: Scope, customerId: string): Promise<{ card: CardOnFile; gateway: GatewayName } | null> {
  const saved = await ctx.savedCards!.defaultCard(ctx.em, customerId);
  const gateway = saved ? saved.gateway ?? tokenGateway(saved.card.token) : null;
  if (!saved || !gateway) return null;
  const unusable = unusableReason(ctx.gateways, scope, gateway);
  if (unusable) {
    throw new ApiError({
      status: 503, code: 'gateway_not_configured', title: 'Service Unavailable', headers: { 'Retry-After': '60' },
      detail: `The customer's saved card was tokenised by ${gateway}, which is ${unusable}; nothing was charged.`,
      suggestion: `Configure the ${gateway} gateway on the server, or send a payment_method with the split.`,
    });
  }
  if (!supportsTransfers(gateway)) {
    throw transfersNotSupported(
      `The customer's saved card was tokenised by ${gateway}, and its token can be charged there only; ${gateway} makes no marketplace transfers. Nothing was charged.`,
      'Send a payment_method with the split (it is tokenised with a gateway that makes transfers), or give the customer\'s subscription a new payment method.',
      [{ path: 'customer_id', message: `the customer's saved card belongs to ${gateway}, which makes no transfers` }],
    );
  }
  return { card: saved.card, gateway };
}

function transfersNotSupported(detail: string, suggestion: string, errors?: FieldError[]): ApiError {
  return new ApiError({ status: 422, code: 'transfers_not_supported', title: 'Transfers Not Supported', detail, suggestion, ...(errors ? { errors } : {}) });
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
