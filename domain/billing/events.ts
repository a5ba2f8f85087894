import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerExample } from '../customers/public.ts';
import { invoiceSchema, subscriptionSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Subscription = z.input<typeof subscriptionSchema>;
type Invoice = z.input<typeof invoiceSchema>;

const subscriptionExample = (status: Subscription['status']): Subscription => ({
  id: 'sub_01jpa7q2c9e1kx5f8h3m6r0t4v', object: 'subscription', livemode: false, customer_id: customerExample.id,
  plan_id: 'plan_01jpa7p0b8d0jw4e7g2l5q9s3u', billing_cycle: 'monthly', status, auto_collection: true, days_until_due: 30,
  trial_end: null, current_period_start: '2025-03-14T09:30:00.000Z', current_period_end: '2025-04-14T09:30:00.000Z',
  next_invoice_date: status === 'canceled' || status === 'paused' ? null : '2025-04-14T09:30:00.000Z', cancel_at_period_end: false,
  canceled_at: status === 'canceled' ? ts : null, paused_at: status === 'paused' ? ts : null, resumes_at: null, tax_jurisdiction: null,
  test_clock: null, payment_method: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 } },
  workflow_id: 'subscription-sub_01jpa7q2c9e1kx5f8h3m6r0t4v', metadata: {}, created_at: ts, updated_at: ts,
});
const invoiceExample = (status: Invoice['status']): Invoice => ({
  id: 'inv_01jpa7s8d2g4hm6q9v1x3z5b7n', object: 'invoice', livemode: false, customer_id: customerExample.id,
  subscription_id: 'sub_01jpa7q2c9e1kx5f8h3m6r0t4v', number: status === 'draft' ? null : 'INV-2025-000042', template_id: null, status, currency: 'USD', subtotal: 4900, tax: 931, amount: 5831,
  amount_due: status === 'paid' ? 0 : 5831, amount_paid: status === 'paid' ? 5831 : 0, due_date: '2025-03-14',
  period_start: '2025-02-14T09:30:00.000Z', period_end: ts,
  line_items: [{
    type: 'subscription', description: 'Pro (monthly)', quantity: '1', unit_amount: '4900', amount: 4900,
    period: { start: '2025-02-14T09:30:00.000Z', end: ts }, tax_amounts: [{ tax_rate_id: 'txr_01jpa7r5c1f3gl5p8u0w2y4a6m', amount: 931 }],
  }],
  taxes: [{ tax_rate_id: 'txr_01jpa7r5c1f3gl5p8u0w2y4a6m', name: 'USt', jurisdiction: 'DE', percentage: '19', taxable_amount: 4900, amount: 931 }],
  payment_method: 'visa **** 4242', auto_collection: true, attempt_count: status === 'open' ? 0 : 1,
  last_payment_id: status === 'open' ? null : 'pay_01jpa7v0f4j6kn8r1w3y5a7c9e', paid_at: status === 'paid' ? ts : null,
  finalized_at: status === 'draft' ? null : ts, created_at: ts,
});

/** Events the billing area records. */
export const billingEvents = [
  eventKind({
    type: 'subscription.created', aboutCustomer: true, schema: subscriptionSchema,
    description: 'A subscription was created (its trial or first billing period has started).',
    example: subscriptionExample('active'),
  }),
  eventKind({
    type: 'subscription.paused', aboutCustomer: true, schema: subscriptionSchema,
    description: 'A subscription was paused; no invoices are issued until it resumes.',
    example: subscriptionExample('paused'),
  }),
  eventKind({
    type: 'subscription.resumed', aboutCustomer: true, schema: subscriptionSchema,
    description: 'A paused subscription was resumed.',
    example: subscriptionExample('active'),
  }),
  eventKind({
    type: 'subscription.canceled', aboutCustomer: true, schema: subscriptionSchema,
    description: 'A subscription was canceled (at once or at the end of its period).',
    example: subscriptionExample('canceled'),
  }),
  eventKind({
    type: 'invoice.created', aboutCustomer: true, schema: invoiceSchema,
    description: 'An invoice was issued.',
    example: invoiceExample('open'),
  }),
  eventKind({
    type: 'invoice.finalized', aboutCustomer: true, schema: invoiceSchema,
    description: 'A draft invoice was finalised: it has its number and is open for payment.',
    example: invoiceExample('open'),
  }),
  eventKind({
    type: 'invoice.paid', aboutCustomer: true, schema: invoiceSchema,
    description: 'An invoice was paid in full.',
    example: invoiceExample('paid'),
  }),
  eventKind({
    type: 'invoice.payment_failed', aboutCustomer: true, schema: invoiceSchema,
    description: 'Collecting an invoice failed; it will be retried per the dunning schedule.',
    example: invoiceExample('open'),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof billingEvents)[number]['type'], true> {}
}
