import { z } from 'zod';

/**
 * The rewards area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only.
 */

const timestamp = z.iso.datetime();

export const earnRuleSchema = z.object({
  currency: z.string().describe('ISO 4217 code.'),
  points_per_unit: z.number().describe('Points per one major unit of the currency (e.g. 1 per USD 1.00); at most 4 decimals.'),
}).meta({ id: 'LoyaltyEarnRule' });

export const tierRuleSchema = z.object({
  name: z.string(),
  threshold: z.number().int().describe('Points earned in the rolling 12 months needed to reach the tier.'),
  earn_multiplier: z.number().describe('Applied to every grant while the customer is in the tier.'),
}).meta({ id: 'LoyaltyTier' });

export const programSchema = z.object({
  id: z.string(),
  object: z.literal('loyalty_program'),
  livemode: z.boolean(),
  earn_rules: z.array(earnRuleSchema).describe('How many points a paid order earns, by currency; orders in other currencies earn none.'),
  return_window_days: z.number().int().describe('Days an order\'s points stay pending (refunds and cancellations reverse them).'),
  points_expiry_months: z.number().int().nullable().describe('Default lifetime of a grant; null: points never expire.'),
  tiers: z.array(tierRuleSchema).describe('Lowest first; the lowest tier\'s threshold is 0.'),
  downgrade_policy: z.object({
    type: z.enum(['anniversary', 'never']).describe('anniversary: re-evaluated on each anniversary of reaching the tier.'),
    max_tiers_down: z.number().int().describe('At most this many tiers down per evaluation.'),
  }),
  test_clock: z.object({ frozen_time: timestamp }).nullable().describe('Sandbox only: the time the program runs on.'),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'LoyaltyProgram' });

export const rewardSchema = z.object({
  id: z.string(),
  object: z.literal('reward'),
  livemode: z.boolean(),
  name: z.string(),
  description: z.string().nullable(),
  cost: z.number().int().describe('Points a redemption spends.'),
  expires: z.string().nullable().describe('Last day (YYYY-MM-DD) it can be redeemed; null: no end.'),
  stock: z.number().int().nullable().describe('How many can ever be redeemed; null: unlimited.'),
  stock_remaining: z.number().int().nullable(),
  redeemed_count: z.number().int(),
  status: z.enum(['active', 'archived']),
  metadata: z.record(z.string(), z.string()),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Reward' });

export const grantSchema = z.object({
  id: z.string(),
  object: z.literal('loyalty_grant'),
  livemode: z.boolean(),
  customer_id: z.string(),
  source: z.enum(['award', 'order', 'adjustment']),
  points: z.number().int().describe('Points asked for (before multipliers).'),
  multiplier: z.number(),
  tier: z.string().describe('The customer\'s tier when the points were credited.'),
  tier_multiplier: z.number(),
  credited_points: z.number().int().describe('floor(points × multiplier × tier_multiplier).'),
  remaining_points: z.number().int(),
  reversed_points: z.number().int(),
  status: z.enum(['pending', 'available', 'spent', 'expired', 'reversed']),
  reason: z.string(),
  order_id: z.string().nullable(),
  available_at: timestamp.describe('When pending points become available (the return window\'s end).'),
  expires_at: timestamp.nullable(),
  workflow_id: z.string(),
  metadata: z.record(z.string(), z.string()),
  created_at: timestamp,
}).meta({ id: 'LoyaltyGrant' });

export const ledgerEntrySchema = z.object({
  id: z.string(),
  object: z.literal('loyalty_ledger_entry'),
  livemode: z.boolean(),
  customer_id: z.string(),
  type: z.enum(['grant', 'activation', 'redemption', 'expiry', 'reversal', 'adjustment']),
  points_change: z.number().int().describe('Change of the available balance.'),
  pending_change: z.number().int(),
  shortfall_change: z.number().int(),
  balance_after: z.number().int(),
  pending_after: z.number().int(),
  shortfall_after: z.number().int(),
  grant_id: z.string().nullable(),
  redemption_id: z.string().nullable(),
  order_id: z.string().nullable(),
  reason: z.string().nullable(),
  allocations: z.array(z.object({ grant_id: z.string(), points: z.number().int() })).describe('The grants the points came from or went to.'),
  created_at: timestamp.describe('When the change took effect (the test clock\'s time in the sandbox).'),
}).meta({ id: 'LoyaltyLedgerEntry' });

export const redemptionSchema = z.object({
  id: z.string(),
  object: z.literal('loyalty_redemption'),
  livemode: z.boolean(),
  customer_id: z.string(),
  reward_id: z.string(),
  points_used: z.number().int(),
  code: z.string().describe('The code the customer presents to claim the reward.'),
  balance_after: z.number().int(),
  metadata: z.record(z.string(), z.string()),
  created_at: timestamp,
}).meta({ id: 'LoyaltyRedemption' });

export const balanceSchema = z.object({
  object: z.literal('loyalty_balance'),
  livemode: z.boolean(),
  customer_id: z.string(),
  points_balance: z.number().int().describe('Available points.'),
  tier: z.object({
    current: z.string(),
    points_to_next: z.number().int().nullable().describe('Points still to earn (rolling 12 months) for the next tier; null at the top.'),
    next_tier: z.string().nullable(),
  }),
  lifetime_points: z.number().int().describe('Points ever made available, net of reversals.'),
  pending_points: z.number().int(),
  shortfall_points: z.number().int().describe('Reversed points that were already spent; paid back from the next points earned, and redemptions wait until then.'),
  points_earned_12m: z.number().int(),
  tier_review_at: timestamp.nullable(),
  next_expiry: z.object({ points: z.number().int(), expires_at: timestamp }).nullable(),
  available_rewards: z.array(z.object({
    id: z.string(), name: z.string(), cost: z.number().int(), expires: z.string().nullable().meta({ format: 'date' }),
  })).describe('Active rewards in stock that the balance affords now, cheapest first.'),
}).meta({ id: 'LoyaltyBalance' });

export const tierChangeSchema = z.object({
  object: z.literal('loyalty_tier_change'),
  livemode: z.boolean(),
  customer_id: z.string(),
  previous_tier: z.string(),
  tier: z.string(),
  direction: z.enum(['upgrade', 'downgrade']),
  points_earned_12m: z.number().int(),
  tier_review_at: timestamp.nullable(),
  changed_at: timestamp,
}).meta({ id: 'LoyaltyTierChange' });

export const testClockSchema = z.object({
  object: z.literal('loyalty_test_clock'),
  livemode: z.literal(false),
  frozen_time: timestamp,
  customers: z.number().int().describe('Loyalty accounts that ran up to frozen_time.'),
}).meta({ id: 'LoyaltyTestClock' });

export type ProgramView = z.output<typeof programSchema>;
export type RewardView = z.output<typeof rewardSchema>;
export type GrantView = z.output<typeof grantSchema>;
export type LedgerEntryView = z.output<typeof ledgerEntrySchema>;
export type RedemptionView = z.output<typeof redemptionSchema>;
export type BalanceView = z.output<typeof balanceSchema>;
export type TierChangeView = z.output<typeof tierChangeSchema>;
export type TestClockView = z.output<typeof testClockSchema>;
