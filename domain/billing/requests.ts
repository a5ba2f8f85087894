import { z } from 'zod';
import { metadata } from '../../api/http/schemas.ts';
import { BILLING_CYCLES } from '../../workflows/billing/shared.ts';
import { checkCard, type CardInput } from '../payments/public.ts';
import type { CreateSubscriptionInput } from './subscriptions.ts';

/**
 * The request bodies of the subscription writes that GraphQL offers too: POST /v3/subscriptions,
 * POST /v3/subscriptions/{id}/cancel and the `createSubscription` / `cancelSubscription` mutations
 * validate with the same schemas, so both accept and refuse the same input.
 */

const id = z.string().min(1).max(64);

export const card = z.strictObject({
  number: z.string().min(1).max(40), exp_month: z.number().int(), exp_year: z.number().int(), cvc: z.string().min(1).max(8),
}).superRefine((c, ctx) => {
  for (const e of checkCard(c, new Date(), '')) ctx.addIssue({ code: 'custom', path: [e.path.replace(/^\./, '')], message: e.message });
});

export const subscriptionBody = z.strictObject({
  customer_id: id,
  plan_id: id,
  billing_cycle: z.enum(BILLING_CYCLES).optional().describe('Defaults to the plan\'s interval; usage_based bills only usage (monthly periods).'),
  auto_collection: z.boolean().default(true).describe('Charge each invoice to payment_method (without one, invoices wait open for PATCH payment_method); false issues it with a due date (days_until_due).'),
  trial_period_days: z.number().int().min(0).max(730).default(0),
  days_until_due: z.number().int().min(0).max(365).default(30).describe('Net terms for invoices without auto collection.'),
  tax_jurisdiction: z.string().regex(/^[A-Z]{2}(-[A-Z0-9]{1,3})?$/, 'expected a country code or country-region such as DE or US-CA').optional(),
  payment_method: z.strictObject({ type: z.literal('card'), card }).optional().describe('Tokenized with the gateway before anything else; only brand and last4 are kept. Optional: without it, auto-collected invoices wait open until one is given.'),
  test_clock: id.optional().describe('Sandbox only: run this subscription on a test clock.'),
  metadata: metadata.optional(),
});

export const cancelSubscriptionBody = z.strictObject({ at_period_end: z.boolean().default(false) });

/** What `createSubscription` takes from a validated body, the new subscription's id and the request id. */
export function subscriptionInput(body: z.output<typeof subscriptionBody>, subscriptionId: string, requestId: string | null): CreateSubscriptionInput {
  return {
    subscriptionId,
    customerId: body.customer_id, planId: body.plan_id, billingCycle: body.billing_cycle ?? null, autoCollection: body.auto_collection,
    trialPeriodDays: body.trial_period_days, daysUntilDue: body.days_until_due, taxJurisdiction: body.tax_jurisdiction ?? null,
    testClockId: body.test_clock ?? null, card: (body.payment_method?.card as CardInput | undefined) ?? null, metadata: body.metadata ?? {}, requestId,
  };
}
