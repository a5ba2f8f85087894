import { z } from 'zod';
import { BILLING_CYCLES, INTERVALS, SUBSCRIPTION_STATUSES } from '../../workflows/billing/shared.ts';

/**
 * The billing area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only (workflows import the types, with `import type`).
 */

export const dunningSchema = z.object({ retry_schedule_days: z.array(z.number()), final_action: z.enum(['cancel', 'unpaid']) });
export const planSchema = z.object({
  id: z.string(), object: z.literal('plan'), livemode: z.boolean(), name: z.string(), currency: z.string(), amount: z.number().int(),
  interval: z.enum(INTERVALS),
  usage: z.object({ metric_name: z.string(), unit_amount: z.string(), tiers: z.array(z.object({ up_to: z.number().nullable(), unit_amount: z.string() })).nullable() }).nullable(),
  dunning: dunningSchema, metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(),
}).meta({ id: 'Plan' });

export const subscriptionSchema = z.object({
  id: z.string(), object: z.literal('subscription'), livemode: z.boolean(), customer_id: z.string(), plan_id: z.string(),
  billing_cycle: z.enum(BILLING_CYCLES), status: z.enum(SUBSCRIPTION_STATUSES), auto_collection: z.boolean(), days_until_due: z.number().int(),
  trial_end: z.string().nullable(), current_period_start: z.string(), current_period_end: z.string(), next_invoice_date: z.string().nullable(),
  cancel_at_period_end: z.boolean(), canceled_at: z.string().nullable(), paused_at: z.string().nullable(), resumes_at: z.string().nullable(),
  tax_jurisdiction: z.string().nullable(), test_clock: z.string().nullable(),
  payment_method: z.object({ type: z.literal('card'), card: z.object({ brand: z.string(), last4: z.string(), exp_month: z.number(), exp_year: z.number() }) }).nullable(),
  workflow_id: z.string(), metadata: z.record(z.string(), z.string()), created_at: z.string(), updated_at: z.string(),
}).meta({ id: 'Subscription' });

export const invoiceSchema = z.object({
  id: z.string(), object: z.literal('invoice'), livemode: z.boolean(), customer_id: z.string(),
  subscription_id: z.string().nullable().describe('Null for a one-off invoice (POST /v3/invoices).'),
  number: z.string().nullable().describe('Gap-free per account, mode and prefix (e.g. INV-2026-000123), assigned when the invoice is finalised; null on drafts.'),
  template_id: z.string().nullable().describe('The invoice template it renders with; null: the account default (or the built-in one).'),
  status: z.enum(['draft', 'open', 'paid', 'uncollectible', 'void']), currency: z.string(),
  subtotal: z.number().int(), tax: z.number().int(), amount: z.number().int().describe('Total in minor units (subtotal + tax).'),
  amount_due: z.number().int(), amount_paid: z.number().int(), due_date: z.string(), period_start: z.string(), period_end: z.string(),
  line_items: z.array(z.object({
    type: z.enum(['subscription', 'usage', 'proration', 'one_off']), description: z.string(), quantity: z.string(), unit_amount: z.string().nullable(),
    amount: z.number().int(), period: z.object({ start: z.string(), end: z.string() }),
    tax_amounts: z.array(z.object({ tax_rate_id: z.string(), amount: z.number().int() })),
  })),
  taxes: z.array(z.object({ tax_rate_id: z.string(), name: z.string(), jurisdiction: z.string(), percentage: z.string(), taxable_amount: z.number().int(), amount: z.number().int() })),
  payment_method: z.string().nullable().describe('Masked card descriptor, e.g. "visa **** 4242".'),
  auto_collection: z.boolean(), attempt_count: z.number().int(), last_payment_id: z.string().nullable(), paid_at: z.string().nullable(),
  finalized_at: z.string().nullable(), created_at: z.string(),
}).meta({ id: 'Invoice' });

export const taxRateSchema = z.object({
  id: z.string(), object: z.literal('tax_rate'), livemode: z.boolean(), jurisdiction: z.string(), name: z.string(), percentage: z.string(), created_at: z.string(),
}).meta({ id: 'TaxRate' });
export const clockSchema = z.object({
  id: z.string(), object: z.literal('test_clock'), livemode: z.literal(false), name: z.string().nullable(), frozen_time: z.string(),
  status: z.enum(['ready', 'advancing']), created_at: z.string(),
}).meta({ id: 'TestClock' });
export const usageSchema = z.object({
  id: z.string(), object: z.literal('usage_record'), livemode: z.boolean(), subscription_id: z.string(), metric_name: z.string(),
  quantity: z.number().describe('The quantity recorded (up to 6 decimals), as a JSON number.'), timestamp: z.string(), invoice_id: z.string().nullable(), created_at: z.string(),
}).meta({ id: 'UsageRecord' });

export type PlanView = z.output<typeof planSchema>;
export type SubscriptionView = z.output<typeof subscriptionSchema>;
export type InvoiceView = z.output<typeof invoiceSchema>;
export type InvoiceLineItem = InvoiceView['line_items'][number];
export type TaxRateView = z.output<typeof taxRateSchema>;
export type TestClockView = z.output<typeof clockSchema>;
export type UsageRecordView = z.output<typeof usageSchema>;
