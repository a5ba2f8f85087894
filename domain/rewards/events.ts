import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerExample } from '../customers/public.ts';
import { grantSchema, ledgerEntrySchema, redemptionSchema, tierChangeSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
const customer = customerExample.id;

const grantExample: z.input<typeof grantSchema> = {
  id: 'lgr_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'loyalty_grant', livemode: false, customer_id: customer, source: 'order', points: 129,
  multiplier: 1, tier: 'silver', tier_multiplier: 1.25, credited_points: 161, remaining_points: 161, reversed_points: 0, status: 'pending',
  reason: 'order_paid', order_id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f', available_at: '2025-03-28T09:30:00.000Z', expires_at: '2026-03-14T09:30:00.000Z',
  workflow_id: `loyalty-${customer}`, metadata: {}, created_at: ts,
};

const entryExample = (type: 'expiry' | 'reversal'): z.input<typeof ledgerEntrySchema> => ({
  id: 'lle_01jpa7v0f4j6kn8r1w3y5a7c9f', object: 'loyalty_ledger_entry', livemode: false, customer_id: customer, type,
  points_change: -40, pending_change: 0, shortfall_change: 0, balance_after: 120, pending_after: 0, shortfall_after: 0,
  grant_id: type === 'expiry' ? grantExample.id : null, redemption_id: null, order_id: type === 'reversal' ? grantExample.order_id : null,
  reason: type === 'expiry' ? 'expired' : 'payment_refunded', allocations: [{ grant_id: grantExample.id, points: 40 }], created_at: ts,
});

/** Events the rewards area records. */
export const rewardsEvents = [
  eventKind({
    type: 'rewards.points.awarded', aboutCustomer: true, schema: grantSchema,
    description: 'Points were credited to a customer (an award, a paid order, or a positive adjustment); pending until `available_at`.',
    example: grantExample,
  }),
  eventKind({
    type: 'rewards.points.expired', aboutCustomer: true, schema: ledgerEntrySchema,
    description: 'The remaining points of a grant expired.',
    example: entryExample('expiry'),
  }),
  eventKind({
    type: 'rewards.points.reversed', aboutCustomer: true, schema: ledgerEntrySchema,
    description: 'Points an order earned were reversed (refund or cancellation); a `shortfall_change` records points already spent.',
    example: entryExample('reversal'),
  }),
  eventKind({
    type: 'rewards.redeemed', aboutCustomer: true, schema: redemptionSchema,
    description: 'A customer redeemed points for a reward.',
    example: {
      id: 'lrd_01jpa7v0f4j6kn8r1w3y5a7c9g', object: 'loyalty_redemption', livemode: false, customer_id: customer,
      reward_id: 'rwd_01jpa7v0f4j6kn8r1w3y5a7c9h', points_used: 500, code: 'RDM-7K2M-9QXT-4HWB', balance_after: 120, metadata: {}, created_at: ts,
    },
  }),
  eventKind({
    type: 'loyalty.tier.changed', aboutCustomer: true, schema: tierChangeSchema,
    description: 'A customer moved up a tier (as soon as they earned enough) or down (on the anniversary of reaching it).',
    example: {
      object: 'loyalty_tier_change', livemode: false, customer_id: customer, previous_tier: 'silver', tier: 'gold', direction: 'upgrade',
      points_earned_12m: 5120, tier_review_at: '2026-03-14T09:30:00.000Z', changed_at: ts,
    },
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof rewardsEvents)[number]['type'], true> {}
}
