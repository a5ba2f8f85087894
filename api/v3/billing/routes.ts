import type { Request } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { CardInput } from '../../../domain/payments/public.ts';
import {
  createPlan, createTaxRate, createTestClock, listInvoices, listPlans,
  listSubscriptions, listTaxRates, readInvoice, readPlan, readSubscription, readTestClock, recordUsage,
} from '../../../domain/billing/service.ts';
import {
  advanceTestClock, cancelSubscription, changeSubscriptionPlan, createSubscription, pauseSubscription, resumeSubscription, updatePaymentMethod,
  type BillingContext,
} from '../../../domain/billing/subscriptions.ts';
import { SUPPORTED_CURRENCIES, isSupportedCurrency } from '../../../domain/money.ts';
import { INTERVALS, SUBSCRIPTION_STATUSES } from '../../../workflows/billing/shared.ts';
import {
  clockSchema, invoiceSchema, planSchema, subscriptionSchema, taxRateSchema, usageSchema,
} from '../../../domain/billing/schemas.ts';
import { cancelSubscriptionBody, card, subscriptionBody, subscriptionInput } from '../../../domain/billing/requests.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { csv, metadata } from '../../http/schemas.ts';

const currency = z.string().regex(/^[A-Za-z]{3}$/, 'expected a three-letter ISO 4217 currency code such as USD')
  .transform((c) => c.toUpperCase())
  .refine(isSupportedCurrency, { message: `currency not supported; use one of ${SUPPORTED_CURRENCIES.join(', ')}` });
const decimal = z.union([z.number().nonnegative(), z.string()])
  .transform((v) => (typeof v === 'number' ? String(v) : v.trim()))
  .refine((v) => /^\d{1,14}(\.\d{1,6})?$/.test(v), 'expected a non-negative decimal with at most 6 decimal places');
const timestamp = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 timestamp such as 2025-03-14T09:30:00Z' }).transform((t) => new Date(t));
const id = z.string().min(1).max(64);

const usagePricing = z.strictObject({
  metric_name: z.string().regex(/^[a-z0-9_.:-]{1,64}$/, 'lower-case letters, digits and _ . : -, up to 64 characters'),
  unit_amount: decimal.describe('Minor units per unit (up to 6 decimals), e.g. "0.5" = half a cent.'),
  tiers: z.array(z.strictObject({ up_to: z.number().int().positive().nullable(), unit_amount: decimal })).min(1).max(20).optional()
    .describe('Graduated tiers in ascending order; the last has up_to null.'),
}).superRefine((u, ctx) => {
  if (!u.tiers) return;
  u.tiers.forEach((t, i) => {
    const last = i === u.tiers!.length - 1;
    if (last !== (t.up_to === null)) ctx.addIssue({ code: 'custom', path: ['tiers', i, 'up_to'], message: 'only the last tier has up_to null' });
    const prev = u.tiers![i - 1]?.up_to;
    if (i > 0 && t.up_to !== null && prev != null && t.up_to <= prev) ctx.addIssue({ code: 'custom', path: ['tiers', i, 'up_to'], message: 'tiers must ascend' });
  });
});

const planBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  currency,
  amount: z.number().int('amount is an integer number of minor units').nonnegative().max(99_999_999_999).default(0).describe('Flat amount per interval, minor units.'),
  interval: z.enum(INTERVALS),
  usage: usagePricing.optional(),
  dunning: z.strictObject({
    retry_schedule_days: z.array(z.number().int().min(1).max(60)).max(10),
    final_action: z.enum(['cancel', 'unpaid']),
  }).optional().describe('Retries after a failed collection; default 3, 5 and 7 days, then cancel.'),
  metadata: metadata.optional(),
}).refine((p) => p.amount > 0 || p.usage, { path: ['amount'], message: 'a plan needs a flat amount, usage pricing, or both' });

function ctxOf(deps: AppDeps, em: EntityManager): BillingContext {
  return { em, temporal: deps.temporal, gateways: deps.paymentGateways, cyclesPerRun: deps.config.BILLING_CYCLES_PER_RUN };
}
function requestKey(req: Request): string | null {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key ? key : null;
}

const subscriptionParams = z.strictObject({ subscription_id: id });

export const billingRoutes = [
  route({
    method: 'post', path: '/v3/plans', operationId: 'createPlan', tag: 'Billing', summary: 'Create a plan',
    permission: 'billing:write', status: 201, body: planBody, response: planSchema,
    async handler({ em, auth, body }) {
      const plan = await createPlan(em(), auth, {
        name: body.name, currency: body.currency, amount: body.amount, interval: body.interval,
        usage: body.usage ? { metric_name: body.usage.metric_name, unit_amount: body.usage.unit_amount, tiers: body.usage.tiers ?? null } : null,
        dunning: body.dunning ?? null, metadata: body.metadata ?? {},
      });
      return { body: plan, headers: { Location: `/v3/plans/${plan.id}` } };
    },
  }),
  getRoute({
    path: '/v3/plans/{plan_id}', operationId: 'getPlan', tag: 'Billing', summary: 'Retrieve a plan',
    permission: 'billing:read', readOnly: true, params: z.strictObject({ plan_id: id }), response: planSchema,
    get: ({ deps, auth, params }) => readPlan(deps.orm, auth, params.plan_id),
  }),
  listRoute({
    path: '/v3/plans', operationId: 'listPlans', tag: 'Billing', summary: 'List plans',
    permission: 'billing:read', item: planSchema,
    list: ({ em }, page) => listPlans(em(), page.where, page.direction, page.limit),
  }),
  route({
    method: 'post', path: '/v3/tax_rates', operationId: 'createTaxRate', tag: 'Billing',
    summary: 'Create a tax rate for a jurisdiction (applied to every invoice line of subscriptions in it)',
    permission: 'billing:write', status: 201,
    body: z.strictObject({
      jurisdiction: z.string().regex(/^[A-Z]{2}(-[A-Z0-9]{1,3})?$/, 'expected a country code or country-region such as DE or US-CA'),
      name: z.string().trim().min(1).max(100),
      percentage: decimal.refine((v) => Number(v) <= 100 && /^\d+(\.\d{1,4})?$/.test(v), 'a percentage from 0 to 100 with at most 4 decimals'),
    }),
    response: taxRateSchema,
    async handler({ em, auth, body }) {
      return { body: await createTaxRate(em(), auth, body) };
    },
  }),
  listRoute({
    path: '/v3/tax_rates', operationId: 'listTaxRates', tag: 'Billing', summary: 'List tax rates',
    permission: 'billing:read',
    query: z.strictObject({ ...listQuery, jurisdiction: z.string().max(10).optional() }), item: taxRateSchema,
    list({ em, query }, page) {
      const where = { ...page.where, ...(query.jurisdiction ? { jurisdiction: query.jurisdiction } : {}) };
      return listTaxRates(em(), where, page.direction, page.limit);
    },
  }),
  route({
    method: 'post', path: '/v3/subscriptions', operationId: 'createSubscription', tag: 'Billing',
    summary: 'Create a subscription (its workflow writes it; the answer comes once it is stored)',
    permission: 'billing:write', status: 201, temporal: true, body: subscriptionBody, response: subscriptionSchema,
    async handler({ deps, em, auth, body, requestId, resourceId }) {
      const sub = await createSubscription(ctxOf(deps, em()), auth, subscriptionInput(body, await resourceId('subscription'), requestId));
      return { body: sub, headers: { Location: `/v3/subscriptions/${sub.id}` } };
    },
  }),
  getRoute({
    path: '/v3/subscriptions/{subscription_id}', operationId: 'getSubscription', tag: 'Billing', summary: 'Retrieve a subscription',
    permission: 'billing:read', readOnly: true, params: subscriptionParams, response: subscriptionSchema,
    get: ({ deps, auth, params }) => readSubscription(deps.orm, auth, params.subscription_id),
  }),
  listRoute({
    path: '/v3/subscriptions', operationId: 'listSubscriptions', tag: 'Billing', summary: 'List subscriptions',
    permission: 'billing:read',
    query: z.strictObject({ ...listQuery, customer_id: csv(id).optional(), status: csv(z.enum(SUBSCRIPTION_STATUSES)).optional() }),
    item: subscriptionSchema,
    list: ({ em, query }, page) => listSubscriptions(em(), query, page),
  }),
  route({
    method: 'post', path: '/v3/subscriptions/{subscription_id}/pause', operationId: 'pauseSubscription', tag: 'Billing',
    summary: 'Pause a subscription (no invoices until it resumes, by hand or at resumes_at)', permission: 'billing:write', status: 200, temporal: true,
    params: subscriptionParams, body: z.strictObject({ resumes_at: timestamp.optional() }), response: subscriptionSchema,
    async handler({ deps, em, params, body, requestId, idempotencyKey }) {
      return { body: await pauseSubscription(ctxOf(deps, em()), params.subscription_id, body.resumes_at ?? null, requestId, idempotencyKey) };
    },
  }),
  route({
    method: 'post', path: '/v3/subscriptions/{subscription_id}/resume', operationId: 'resumeSubscription', tag: 'Billing',
    summary: 'Resume a paused subscription (the paused time extends the current period)', permission: 'billing:write', status: 200, temporal: true,
    params: subscriptionParams, body: z.strictObject({}), response: subscriptionSchema,
    async handler({ deps, em, params, requestId, idempotencyKey }) {
      return { body: await resumeSubscription(ctxOf(deps, em()), params.subscription_id, requestId, idempotencyKey) };
    },
  }),
  route({
    method: 'post', path: '/v3/subscriptions/{subscription_id}/cancel', operationId: 'cancelSubscription', tag: 'Billing',
    summary: 'Cancel a subscription now or at the end of the current period', permission: 'billing:write', status: 200, temporal: true,
    params: subscriptionParams, body: cancelSubscriptionBody, response: subscriptionSchema,
    async handler({ deps, em, params, body, requestId, idempotencyKey }) {
      return { body: await cancelSubscription(ctxOf(deps, em()), params.subscription_id, body.at_period_end, requestId, idempotencyKey) };
    },
  }),
  route({
    method: 'patch', path: '/v3/subscriptions/{subscription_id}', operationId: 'changeSubscriptionPlan', tag: 'Billing',
    summary: 'Change a subscription: another plan (prorated on the next invoice by default) and/or a new card for collections',
    permission: 'billing:write', status: 200, temporal: true, params: subscriptionParams,
    body: z.strictObject({
      plan_id: id.optional(), prorate: z.boolean().default(true),
      payment_method: z.strictObject({ type: z.literal('card'), card }).optional().describe('Replaces the card; the next collection attempt (e.g. a dunning retry) uses it.'),
    }).refine((b) => b.plan_id || b.payment_method, { path: ['plan_id'], message: 'send plan_id, payment_method, or both' }),
    response: subscriptionSchema,
    async handler({ deps, em, auth, params, body, requestId, idempotencyKey }) {
      const ctx = ctxOf(deps, em());
      let view = body.payment_method ? await updatePaymentMethod(ctx, auth, params.subscription_id, body.payment_method.card as CardInput, requestId) : null;
      if (body.plan_id) view = await changeSubscriptionPlan(ctx, params.subscription_id, body.plan_id, body.prorate, requestId, idempotencyKey);
      return { body: view };
    },
  }),
  getRoute({
    path: '/v3/invoices/{invoice_id}', operationId: 'getInvoice', tag: 'Billing', summary: 'Retrieve an invoice',
    permission: 'billing:read', readOnly: true, params: z.strictObject({ invoice_id: id }), response: invoiceSchema,
    get: ({ deps, auth, params }) => readInvoice(deps.orm, auth, params.invoice_id),
  }),
  listRoute({
    path: '/v3/invoices', operationId: 'listInvoices', tag: 'Billing', summary: 'List invoices',
    permission: 'billing:read',
    query: z.strictObject({
      ...listQuery, customer_id: csv(id).optional(), subscription_id: csv(id).optional(),
      status: csv(z.enum(['draft', 'open', 'paid', 'uncollectible', 'void'])).optional(),
    }),
    item: invoiceSchema,
    list: ({ em, query }, page) => listInvoices(em(), query, page),
  }),
  route({
    method: 'post', path: '/v3/usage/records', operationId: 'createUsageRecord', tag: 'Billing',
    summary: 'Record usage of a metered subscription (summed into the invoice of the period its timestamp falls in)',
    permission: 'billing:write', status: 201,
    body: z.strictObject({ subscription_id: id, metric_name: z.string().min(1).max(64), quantity: decimal, timestamp: timestamp.optional() }),
    response: usageSchema,
    async handler({ em, auth, body, req }) {
      return {
        body: await recordUsage(em(), auth, {
          subscriptionId: body.subscription_id, metricName: body.metric_name, quantity: body.quantity, timestamp: body.timestamp ?? null,
          requestIdempotencyKey: requestKey(req),
        }),
      };
    },
  }),
  route({
    method: 'post', path: '/v3/test_clocks', operationId: 'createTestClock', tag: 'Billing', summary: 'Create a test clock (sandbox only)',
    permission: 'billing:write', status: 201,
    body: z.strictObject({ frozen_time: timestamp, name: z.string().max(200).optional() }), response: clockSchema,
    async handler({ em, auth, body }) {
      const clock = await createTestClock(em(), auth, { frozenTime: body.frozen_time, name: body.name ?? null });
      return { body: clock, headers: { Location: `/v3/test_clocks/${clock.id}` } };
    },
  }),
  getRoute({
    path: '/v3/test_clocks/{clock_id}', operationId: 'getTestClock', tag: 'Billing', summary: 'Retrieve a test clock',
    permission: 'billing:read', readOnly: true, params: z.strictObject({ clock_id: id }), response: clockSchema,
    get: ({ deps, auth, params }) => readTestClock(deps.orm, auth, params.clock_id),
  }),
  route({
    method: 'post', path: '/v3/test_clocks/{clock_id}/advance', operationId: 'advanceTestClock', tag: 'Billing',
    summary: 'Advance a test clock; answers once every subscription on it has billed up to the new time (202 if that takes too long)',
    permission: 'billing:write', status: 200, temporal: true,
    // The call returns once every subscription on the clock has caught up (at most 55 s).
    temporalWaitMs: () => 55_000,
    params: z.strictObject({ clock_id: id }), body: z.strictObject({ frozen_time: timestamp }), response: clockSchema,
    responses: { 202: { description: 'Accepted: billing up to the new time is still running (status advancing)', schema: clockSchema } },
    async handler({ deps, em, auth, params, body }) {
      const clock = await advanceTestClock(ctxOf(deps, em()), auth, params.clock_id, body.frozen_time);
      return { status: clock.status === 'ready' ? 200 : 202, body: clock };
    },
  }),
];
