import type { Request } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { checkCard, type CardInput } from '../../domain/payments/cards.ts';
import { describeDecline } from '../../domain/payments/declines.ts';
import {
  cardDeclined, checkCustomers, chargeCardOnFile, chooseGateway, getPayment, processPayment, refundPayment, tokenize,
  type PaymentsContext,
} from '../../domain/payments/process.ts';
import { findPaymentByRequestKey, getRefund } from '../../domain/payments/service.ts';
import { planSplit } from '../../domain/payments/split.ts';
import { SUPPORTED_CURRENCIES, isSupportedCurrency } from '../../domain/money.ts';
import { ApiError, notFound, validationFailed } from '../../platform/errors.ts';
import type { PaymentView, RefundOutcome } from '../../workflows/payments/shared.ts';
import type { AppDeps } from '../deps.ts';
import type { HandlerResult } from '../http/route.ts';
import { route } from '../http/route.ts';
import { metadata } from '../http/schemas.ts';

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
  currency,
  platform_fee: z.number().nonnegative().describe('Decimal major units; receives any rounding remainder of percentage splits.'),
  splits: z.array(z.strictObject({
    destination: z.string().regex(/^(acct|cus)_[A-Za-z0-9_]{1,80}$/, 'expected a connected account id (acct_…) or a customer id (cus_…)'),
    amount: z.number().positive().optional().describe('Decimal major units.'),
    percent: z.number().positive().max(100).optional().describe('Percentage of total_amount.'),
  })).min(1).max(20),
  payment_method: paymentMethod,
  customer_id: z.string().min(1).max(64).optional(),
  description: z.string().max(1000).optional(),
  fraud_protection: z.boolean().default(false),
  metadata: metadata.optional(),
});

const refundBody = z.strictObject({
  amount: z.number().int().positive().optional().describe('Minor units; omitted refunds everything that remains.'),
  reason: z.enum(['duplicate', 'fraudulent', 'requested_by_customer']).optional(),
  metadata: metadata.optional(),
});

const transferSchema = z.object({
  id: z.string(), object: z.literal('transfer'), destination: z.string(), amount: z.number().int(), currency: z.string(),
  status: z.enum(['pending', 'paid', 'failed', 'reversed', 'canceled']),
  failure: z.object({ code: z.string(), message: z.string() }).nullable(),
}).meta({ id: 'Transfer' });

export const paymentSchema = z.object({
  id: z.string(),
  object: z.literal('payment'),
  livemode: z.boolean(),
  status: z.enum(['processing', 'succeeded', 'failed', 'partially_refunded', 'refunded']),
  amount: z.number().int().describe('Minor units.'),
  amount_refunded: z.number().int(),
  currency: z.string(),
  gateway: z.string(),
  created: z.iso.datetime(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  customer_id: z.string().nullable(),
  description: z.string().nullable(),
  fraud_protection: z.boolean(),
  payment_method: z.object({
    type: z.literal('card'),
    card: z.object({ brand: z.string(), last4: z.string(), exp_month: z.number().int(), exp_year: z.number().int() }),
  }),
  risk_score: z.number().int().nullable().describe('0-100 when fraud_protection is on (or the gateway scores it).'),
  settlement: z.object({ expected_date: z.string().nullable(), fees: z.number().int().nullable() }),
  failure: z.object({ code: z.string(), decline_code: z.string().nullable(), message: z.string() }).nullable(),
  workflow_id: z.string(),
  metadata: z.record(z.string(), z.string()),
  split: z.object({
    status: z.enum(['pending', 'completed', 'reversed', 'canceled']),
    platform_fee: z.number().int(),
    rounding_remainder: z.number().int(),
    transfers: z.array(transferSchema),
  }).optional(),
}).meta({ id: 'PaymentStatus' });

const refundSchema = z.object({
  id: z.string(), object: z.literal('refund'), livemode: z.boolean(), payment_id: z.string(), amount: z.number().int(),
  currency: z.string(), status: z.enum(['pending', 'succeeded', 'failed']), reason: z.string().nullable(),
  failure_message: z.string().nullable(), workflow_id: z.string().nullable(), metadata: z.record(z.string(), z.string()),
  created_at: z.iso.datetime(),
}).meta({ id: 'Refund' });

const paymentId = z.strictObject({ payment_id: z.string().min(1).max(64) });
const refundId = z.strictObject({ payment_id: z.string().min(1).max(64), refund_id: z.string().min(1).max(64) });

function context(deps: AppDeps, em: EntityManager): PaymentsContext {
  return { em, temporal: deps.temporal, gateways: deps.paymentGateways, waitMs: deps.config.PAYMENTS_SYNC_WAIT_MS };
}

function requestKey(req: Request): string | null {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key ? key : null;
}

/** 201 once settled; 202 + Location while the gateway is still working; 402 for a decline. */
function paymentAnswer(view: PaymentView, splitDestinations: string[] = []): HandlerResult {
  const location = `/v3/payments/${view.id}/status`;
  if (view.status === 'failed') {
    const code = view.failure?.decline_code ?? view.failure?.code ?? 'generic_decline';
    const described = describeDecline(code);
    throw cardDeclined(code, view.failure?.message || described.message, view, described.suggestion);
  }
  if (view.split?.status === 'reversed') {
    const failedAt = view.split.transfers.findIndex((t) => t.status === 'failed');
    const failed = view.split.transfers[failedAt];
    throw new ApiError({
      status: 422, code: 'transfer_failed', title: 'Transfer Failed',
      detail: `The transfer to ${failed?.destination ?? 'a destination'} failed (${failed?.failure?.code ?? 'unknown'}); the transfers already made were reversed and the charge was refunded.`,
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
    permission: 'payments:write', status: 201, temporal: true,
    body: processBody, response: paymentSchema,
    async handler({ deps, em, auth, body, req, requestId }) {
      const view = await processPayment(context(deps, em()), auth, body.payment_method.card as CardInput, {
        amount: body.amount,
        currency: body.currency,
        customerId: body.customer_id ?? null,
        description: body.description ?? null,
        fraudProtection: body.fraud_protection,
        metadata: body.metadata ?? {},
        requestIdempotencyKey: requestKey(req),
        requestId,
      });
      return paymentAnswer(view);
    },
  }),
  route({
    method: 'post', path: '/v3/payments/marketplace/split', operationId: 'splitPayment', tag: 'Payments',
    summary: 'Charge a card once and pay it out to several destinations, less the platform fee',
    permission: 'payments:write', status: 201, temporal: true,
    body: splitBody, response: paymentSchema,
    async handler({ deps, em, auth, body, req, requestId }) {
      const planned = planSplit({ total_amount: body.total_amount, platform_fee: body.platform_fee, currency: body.currency, splits: body.splits });
      if ('errors' in planned) throw validationFailed(planned.errors);
      const ctx = context(deps, em());
      const key = requestKey(req);
      if (key) {
        const existing = await findPaymentByRequestKey(ctx.em, key);
        if (existing) return paymentAnswer(existing);
      }
      const customers: [string, string][] = body.splits.flatMap((s, i) => (s.destination.startsWith('cus_') ? [[`splits.${i}.destination`, s.destination] as [string, string]] : []));
      if (body.customer_id) customers.push(['customer_id', body.customer_id]);
      const errors = await checkCustomers(ctx.em, customers);
      const gateway = await chooseGateway(ctx, auth);
      if (gateway === 'stripe') {
        body.splits.forEach((s, i) => {
          if (s.destination.startsWith('cus_')) errors.push({ path: `splits.${i}.destination`, message: 'Stripe transfers go to connected accounts (acct_…) only' });
        });
      }
      if (errors.length) throw validationFailed(errors);
      const onFile = await tokenize(ctx, gateway, body.payment_method.card as CardInput);
      const view = await chargeCardOnFile(ctx, auth, gateway, onFile, {
        amount: planned.plan.total,
        currency: body.currency,
        customerId: body.customer_id ?? null,
        description: body.description ?? null,
        fraudProtection: body.fraud_protection,
        metadata: body.metadata ?? {},
        requestIdempotencyKey: key,
        requestId,
      }, planned.plan);
      return paymentAnswer(view, body.splits.map((s) => s.destination));
    },
  }),
  route({
    method: 'get', path: '/v3/payments/{payment_id}/status', operationId: 'getPaymentStatus', tag: 'Payments',
    summary: 'A payment\'s status, amount, gateway, settlement and risk score', permission: 'payments:read', status: 200,
    params: paymentId, response: paymentSchema,
    async handler({ em, params }) {
      return { body: await getPayment(em(), params.payment_id) };
    },
  }),
  route({
    method: 'post', path: '/v3/payments/{payment_id}/refunds', operationId: 'refundPayment', tag: 'Payments',
    summary: 'Refund a payment in full or in part (never more than remains)', permission: 'payments:write', status: 201, temporal: true,
    params: paymentId, body: refundBody, response: refundSchema,
    async handler({ deps, em, auth, params, body, req, requestId }) {
      const outcome = await refundPayment(context(deps, em()), auth, params.payment_id, {
        amount: body.amount ?? null, reason: body.reason ?? null, metadata: body.metadata ?? {}, requestId, requestIdempotencyKey: requestKey(req),
      });
      return refundAnswer(params.payment_id, outcome);
    },
  }),
  route({
    method: 'get', path: '/v3/payments/{payment_id}/refunds/{refund_id}', operationId: 'getRefund', tag: 'Payments',
    summary: 'Retrieve a refund', permission: 'payments:read', status: 200,
    params: refundId, response: refundSchema,
    async handler({ em, params }) {
      const refund = await getRefund(em(), params.refund_id);
      if (refund.payment_id !== params.payment_id) throw notFound('refund', params.refund_id);
      return { body: refund };
    },
  }),
];
