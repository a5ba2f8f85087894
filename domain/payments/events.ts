import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerExample } from '../customers/public.ts';
import { paymentSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Payment = z.input<typeof paymentSchema>;

const paymentExample = (status: Payment['status']): Payment => ({
  id: 'pay_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'payment', livemode: false, status, amount: 4900,
  amount_refunded: status === 'refunded' ? 4900 : 0, currency: 'USD', gateway: 'sandbox',
  routing: { rule_id: null, reason: 'test mode: the sandbox (no routing rule matched)', failed_over: [] }, created: ts, created_at: ts, updated_at: ts,
  customer_id: customerExample.id, description: 'Pro plan, March', fraud_protection: true,
  payment_method: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 } }, funding: 'card',
  risk_score: 12, settlement: { expected_date: status === 'failed' ? null : '2025-03-16', fees: status === 'failed' ? null : 172 },
  failure: status === 'failed' ? { code: 'card_declined', decline_code: 'insufficient_funds', message: 'The card has insufficient funds.' } : null,
  workflow_id: 'payment-pay_01jpa7v0f4j6kn8r1w3y5a7c9e', metadata: {},
});

/** Events the payments area records. */
export const paymentEvents = [
  eventKind({
    type: 'payment.succeeded', aboutCustomer: true, schema: paymentSchema,
    description: 'A payment succeeded.',
    example: paymentExample('succeeded'),
  }),
  eventKind({
    type: 'payment.failed', aboutCustomer: true, schema: paymentSchema,
    description: 'A payment failed (declined, blocked by risk checks or errored at the gateway).',
    example: paymentExample('failed'),
  }),
  eventKind({
    type: 'payment.refunded', aboutCustomer: true, schema: paymentSchema,
    description: 'A payment was refunded, in full or in part (`amount_refunded`).',
    example: paymentExample('refunded'),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof paymentEvents)[number]['type'], true> {}
}
