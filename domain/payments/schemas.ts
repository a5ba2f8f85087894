import { z } from 'zod';

/**
 * The payments area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only (workflows import the types, with `import type`).
 */

export const transferSchema = z.object({
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
  routing: z.object({
    rule_id: z.string().nullable().describe('The routing rule that chose the gateway; null: the account or server default.'),
    reason: z.string().describe('Why this gateway, in words.'),
    failed_over: z.array(z.object({ gateway: z.string(), message: z.string() })).describe('Gateways tried first that were down before any charge was attempted.'),
  }).nullable().describe('How the gateway was chosen; null for payments made before routing existed.'),
  created: z.iso.datetime(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  customer_id: z.string().nullable(),
  description: z.string().nullable(),
  fraud_protection: z.boolean(),
  payment_method: z.object({
    type: z.literal('card'),
    card: z.object({ brand: z.string(), last4: z.string(), exp_month: z.number().int(), exp_year: z.number().int() }),
  }).nullable().describe('The card charged; null when nothing was charged (a marketplace split funded by the platform balance).'),
  funding: z.enum(['card', 'platform_balance']).describe('What paid for it: `card` (a charge of payment_method), or `platform_balance` (a marketplace split paid out of the platform\'s gateway balance: no charge).'),
  risk_score: z.number().int().nullable().describe('0-100 when fraud_protection is on (or the gateway scores it).'),
  settlement: z.object({ expected_date: z.string().nullable(), fees: z.number().int().nullable() }),
  failure: z.object({
    code: z.string(), decline_code: z.string().nullable(), message: z.string(),
    available: z.number().int().optional().describe('balance_insufficient only: the platform balance available in the currency (minor units) when the split was refused.'),
  }).nullable(),
  workflow_id: z.string(),
  metadata: z.record(z.string(), z.string()),
  split: z.object({
    status: z.enum(['pending', 'completed', 'reversed', 'canceled']),
    platform_fee: z.number().int(),
    rounding_remainder: z.number().int(),
    transfers: z.array(transferSchema),
  }).optional(),
}).meta({ id: 'PaymentStatus' });

export const refundSchema = z.object({
  id: z.string(), object: z.literal('refund'), livemode: z.boolean(), payment_id: z.string(), amount: z.number().int(),
  currency: z.string(), status: z.enum(['pending', 'succeeded', 'failed']), reason: z.string().nullable(),
  failure_message: z.string().nullable(), workflow_id: z.string().nullable(), metadata: z.record(z.string(), z.string()),
  created_at: z.iso.datetime(),
}).meta({ id: 'Refund' });

export const routingConditionsSchema = z.strictObject({
  currencies: z.array(z.string().regex(/^[A-Za-z]{3}$/, 'expected ISO 4217 codes such as EUR').transform((c) => c.toUpperCase())).min(1).max(50).optional(),
  amount_gte: z.number().int().min(0).max(99_999_999_999).optional().describe('Minor units of the payment currency.'),
  amount_lte: z.number().int().min(0).max(99_999_999_999).optional(),
  card_brands: z.array(z.enum(['visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown'])).min(1).max(8).optional(),
}).describe('All given conditions must hold; none: every payment.');

export const routingRuleSchema = z.object({
  id: z.string(), object: z.literal('routing_rule'), livemode: z.boolean(), name: z.string(), priority: z.number().int(),
  conditions: z.object({
    currencies: z.array(z.string()).optional(), amount_gte: z.number().int().optional(), amount_lte: z.number().int().optional(), card_brands: z.array(z.string()).optional(),
  }),
  gateways: z.array(z.string()).describe('In order: the first usable one is chosen; the next ones are the failover.'),
  enabled: z.boolean(), created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
}).meta({ id: 'RoutingRule' });

export type RoutingConditions = z.output<typeof routingConditionsSchema>;
export type RoutingRuleView = z.output<typeof routingRuleSchema>;
export type PaymentRouting = NonNullable<z.output<typeof paymentSchema>['routing']>;
export type TransferView = z.output<typeof transferSchema>;
/** The Payment status resource. */
export type PaymentView = z.output<typeof paymentSchema>;
export type RefundView = z.output<typeof refundSchema>;
