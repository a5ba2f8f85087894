import type { Request } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { checkCard, type CardInput } from '../../../domain/payments/cards.ts';
import { describeDecline } from '../../../domain/payments/declines.ts';
import {
  cardDeclined, getPayment, processPayment, processSplitPayment, refundPayment, type ChargeInput, type PaymentsContext,
} from '../../../domain/payments/process.ts';
import { paymentSchema, refundSchema } from '../../../domain/payments/schemas.ts';
import { getRefund } from '../../../domain/payments/service.ts';
import { SUPPORTED_CURRENCIES, isSupportedCurrency } from '../../../domain/money.ts';
import { ApiError, notFound } from '../../../platform/errors.ts';
import type { PaymentView, RefundOutcome } from '../../../workflows/payments/shared.ts';
import type { AppDeps } from '../../http/deps.ts';
import type { HandlerResult } from '../../http/route.ts';
import { getRoute, route } from '../../http/route.ts';
import { metadata } from '../../http/schemas.ts';

const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'expected a three-letter ISO 4217 currency code such as USD')
  .transform((c) => c.toUpperCase())
  .refine(isSupportedCurrency, { message: `currency not supported; use one of ${SUPPORTED_CURRENCIES.join(', ')}` })
  .describe('ISO 4217 code (case-insensitive; answered in upper case).');

/** Card fields, checked together (Luhn, length and CVC by brand, expiry) so every bad field is named at once. */
const card = z
  .strictObject({
    number: z.string().min(1).max(40).describe('The full card number; sent to the gateway for a token and never stored.'),
    exp_month: z.number().int(),
    exp_year: z.number().int().describe('Four digits (two-digit years mean 20xx).'),
    cvc: z.string().min(1).max(8).describe('Never stored.'),
  })
  .superRefine((c, ctx) => {
    for (const e of checkCard(c, new Date(), '')) ctx.addIssue({ code: 'custom', path: [e.path.replace(/^\./, '')], message: e.message });
  });

const paymentMethod = z.strictObject({ type: z.literal('card', 'only card payments are supported: send "type": "card"'), card });

const processBody = z.strictObject({
  amount: z.number().int('amount is an integer number of minor units (cents), e.g. 1999 for 19.99 USD').positive().max(99_999_999_999),
  currency,
  payment_method: paymentMethod,
  customer_id: z.string().min(1).max(64).optional(),
  description: z.string().max(1000).optional(),
  fraud_protection: z.boolean().default(false).describe('Score the payment for risk and block it above the threshold.'),
  metadata: metadata.optional(),
});

const splitBody = z.strictObject({
  total_amount: z.number().positive().describe('Decimal major units (e.g. 100.50).'),
  currency: currency.default('USD').describe('ISO 4217 code (case-insensitive; answered in upper case). Optional: USD when omitted.'),
  platform_fee: z.number().nonnegative().describe('Decimal major units; receives any rounding remainder of percentage splits.'),
  splits: z.array(z.strictObject({
    destination: z.string().regex(/^(acct|cus)_[A-Za-z0-9_]{1,80}$/, 'expected a connected account id (acct_…) or a customer id (cus_…)'),
    amount: z.number().positive().optional().describe('Decimal major units.'),
    percent: z.number().positive().max(100).optional().describe('Percentage of total_amount.'),
  })).min(1).max(20),
  payment_method: paymentMethod.optional().describe(
    'Optional. What funds the split, in order: this card (charged); else the default saved card of customer_id (the card on file of its '
    + 'latest subscription), when it has one; else the platform balance: nothing is charged, the transfers are paid out of the account\'s '
    + 'gateway balance, the platform keeps platform_fee, and the answer has funding "platform_balance" and payment_method null '
    + '(402 balance_insufficient, with `available`, when the balance is short).',
  ),
  customer_id: z.string().min(1).max(64).optional().describe('The paying customer (same account and mode). Without payment_method, its default saved card funds the split.'),
  description: z.string().max(1000).optional(),
  fraud_protection: z.boolean().default(false),
  metadata: metadata.optional(),
});

const refundBody = z.strictObject({
  amount: z.number().int().positive().optional().describe('Minor units; omitted refunds everything that remains.'),
  reason: z.enum(['duplicate', 'fraudulent', 'requested_by_customer']).optional(),
  metadata: metadata.optional(),
});

const paymentResponses = {
  202: { description: 'Accepted: the gateway is still working; poll Location (GET /v3/payments/{id}/status)', schema: paymentSchema },
  402: { description: 'Card declined (card_declined, with decline_code and the failed payment)' },
};

const splitResponses = {
  ...paymentResponses,
  402: { description: 'Card declined (card_declined, with decline_code and the failed payment), or, for a split funded by the platform balance, balance_insufficient (with `available`, minor units, and the failed payment; nothing was transferred)' },
  422: { description: 'Bad fields (validation_failed, e.g. parts that do not add up), or transfer_failed: a transfer failed and the ones made were reversed (and a charge refunded)' },
};

const paymentId = z.strictObject({ payment_id: z.string().min(1).max(64) });
const refundId = z.strictObject({ payment_id: z.string().min(1).max(64), refund_id: z.string().min(1).max(64) });

function context(deps: AppDeps, em: EntityManager): PaymentsContext {
  return { em, temporal: deps.temporal, gateways: deps.paymentGateways, waitMs: deps.config.PAYMENTS_SYNC_WAIT_MS, savedCards: deps.savedCards };
}

function requestKey(req: Request): string | null {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key ? key : null;
}

/** What a payment and a split payment read from their request alike. */
function chargeFields(
  body: { customer_id?: string | undefined; description?: string | undefined; fraud_protection: boolean; metadata?: Record<string, string> | undefined },
  req: Request, requestId: string,
): Omit<ChargeInput, 'amount' | 'currency'> {
  return {
    customerId: body.customer_id ?? null,
    description: body.description ?? null,
    fraudProtection: body.fraud_protection,
    metadata: body.metadata ?? {},
    requestIdempotencyKey: requestKey(req),
    requestId,
  };
}

/** 201 once settled; 202 + Location while the gateway is still working; 402 for a decline. */
function paymentAnswer(view: PaymentView, splitDestinations: string[] = []): HandlerResult {
  const location = `/v3/payments/${view.id}/status`;
  if (view.status === 'failed' && view.failure?.code === 'balance_insufficient') {
    const available = view.failure.available ?? 0;
    throw new ApiError({
      status: 402, code: 'balance_insufficient', title: 'Balance Insufficient',
      detail: `The platform balance has ${available} ${view.currency} minor units available, less than the split pays out; ${view.split?.status === 'reversed' ? 'the transfers made were reversed' : 'nothing was transferred'}.`,
      suggestion: 'Send a payment_method (or a customer_id with a saved card) to fund the split with a charge, or wait until the balance covers it and send it again with a new Idempotency-Key.',
      extensions: { available, payment_id: view.id, payment: view },
    });
  }
  if (view.status === 'failed' && view.split?.status !== 'reversed') {
    const code = view.failure?.decline_code ?? view.failure?.code ?? 'generic_decline';
    const described = describeDecline(code);
    throw cardDeclined(code, view.failure?.message || described.message, view, described.suggestion);
  }
  if (view.split?.status === 'reversed') {
    const failedAt = view.split.transfers.findIndex((t) => t.status === 'failed');
    const failed = view.split.transfers[failedAt];
    throw new ApiError({
      status: 422, code: 'transfer_failed', title: 'Transfer Failed',
      detail: `The transfer to ${failed?.destination ?? 'a destination'} failed (${failed?.failure?.code ?? 'unknown'}); the transfers already made were reversed${view.funding === 'card' ? ' and the charge was refunded' : ' (nothing was charged)'}.`,
      suggestion: 'Fix or replace the destination named in `errors` and send the split again with a new Idempotency-Key.',
      errors: [{ path: `splits.${failedAt >= 0 ? failedAt : splitDestinations.length}.destination`, message: failed?.failure?.message ?? 'the transfer failed' }],
      extensions: { payment_id: view.id, payment: view },
    });
  }
  const settled = view.status !== 'processing' && (!view.split || view.split.status !== 'pending');
  return { status: settled ? 201 : 202, body: view, headers: { Location: location } };
}

function refundAnswer(paymentIdValue: string, outcome: RefundOutcome): HandlerResult {
  if (!outcome.accepted) {
    if (outcome.code === 'payment_not_found') throw notFound('payment', paymentIdValue);
    if (outcome.code === 'payment_not_refundable') {
      throw new ApiError({
        status: 409, code: 'payment_not_refundable', title: 'Conflict', detail: outcome.message,
        suggestion: 'Refund only payments whose status is succeeded or partially_refunded; check GET /v3/payments/{id}/status.',
      });
    }
    throw new ApiError({
      status: 422, code: 'refund_exceeds_remaining', title: 'Refund Exceeds Remaining Amount', detail: outcome.message,
      suggestion: `Refund at most ${outcome.remaining ?? 0} minor units, or omit amount to refund everything that remains.`,
      errors: [{ path: 'amount', message: `at most ${outcome.remaining ?? 0} remains to refund` }],
      extensions: { remaining: outcome.remaining },
    });
  }
  const refund = outcome.refund;
  const location = `/v3/payments/${paymentIdValue}/refunds/${refund.id}`;
  if (refund.status === 'failed') {
    throw new ApiError({
      status: 422, code: 'refund_failed', title: 'Refund Failed', detail: refund.failure_message ?? 'The gateway refused the refund.',
      suggestion: 'Check the payment\'s status and remaining amount; contact support with the refund id if it persists.',
      extensions: { refund },
    });
  }
  return { status: refund.status === 'succeeded' ? 201 : 202, body: refund, headers: { Location: location } };
}

export const paymentRoutes = [
  route({
    method: 'post', path: '/v3/payments/process', operationId: 'processPayment', tag: 'Payments',
    summary: 'Charge a card (201 once the gateway answers, 202 while it is still working, 402 when declined)',
    permission: 'payments:write', status: 201, temporal: true, temporalWaitMs: (deps) => deps.config.PAYMENTS_SYNC_WAIT_MS,
    body: processBody, response: paymentSchema, responses: paymentResponses,
    async handler({ deps, em, auth, body, req, requestId }) {
      const view = await processPayment(context(deps, em()), auth, body.payment_method.card as CardInput, {
        amount: body.amount, currency: body.currency, ...chargeFields(body, req, requestId),
      });
      return paymentAnswer(view);
    },
  }),
  route({
    method: 'post', path: '/v3/payments/marketplace/split', operationId: 'splitPayment', tag: 'Payments',
    summary: 'Pay several destinations from one charge (or from the platform balance when no card is given), less the platform fee',
    permission: 'payments:write', status: 201, temporal: true, temporalWaitMs: (deps) => deps.config.PAYMENTS_SYNC_WAIT_MS,
    body: splitBody, response: paymentSchema, responses: splitResponses,
    async handler({ deps, em, auth, body, req, requestId }) {
      const view = await processSplitPayment(context(deps, em()), auth, (body.payment_method?.card as CardInput | undefined) ?? null, {
        split: { total_amount: body.total_amount, platform_fee: body.platform_fee, currency: body.currency, splits: body.splits },
        ...chargeFields(body, req, requestId),
      });
      return paymentAnswer(view, body.splits.map((s) => s.destination));
    },
  }),
  getRoute({
    path: '/v3/payments/{payment_id}/status', operationId: 'getPaymentStatus', tag: 'Payments',
    summary: 'A payment\'s status, amount, gateway, settlement and risk score', permission: 'payments:read', readOnly: true,
    params: paymentId, response: paymentSchema,
    get: ({ em, params }) => getPayment(em(), params.payment_id),
  }),
  route({
    method: 'post', path: '/v3/payments/{payment_id}/refunds', operationId: 'refundPayment', tag: 'Payments',
    summary: 'Refund a payment in full or in part (never more than remains)', permission: 'payments:write', status: 201, temporal: true,
    temporalWaitMs: (deps) => deps.config.PAYMENTS_SYNC_WAIT_MS,
    params: paymentId, body: refundBody, response: refundSchema,
    responses: { 202: { description: 'Accepted: the gateway is still working on the refund; poll Location', schema: refundSchema } },
    async handler({ deps, em, auth, params, body, req, requestId }) {
      const outcome = await refundPayment(context(deps, em()), auth, params.payment_id, {
        amount: body.amount ?? null, reason: body.reason ?? null, metadata: body.metadata ?? {}, requestId, requestIdempotencyKey: requestKey(req),
      });
      return refundAnswer(params.payment_id, outcome);
    },
  }),
  getRoute({
    path: '/v3/payments/{payment_id}/refunds/{refund_id}', operationId: 'getRefund', tag: 'Payments',
    summary: 'Retrieve a refund', permission: 'payments:read', readOnly: true,
    params: refundId, response: refundSchema,
    async get({ em, params }) {
      const refund = await getRefund(em(), params.refund_id);
      if (refund.payment_id !== params.payment_id) throw notFound('refund', params.refund_id);
      return refund;
    },
  }),
];
