import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import type { EarnRule, TierRule } from './points.ts';

/** One loyalty program per account and mode (created with the defaults when first read). */
export const LoyaltyProgram = defineEntity({
  name: 'LoyaltyProgram',
  tableName: 'loyalty_programs',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    earnRules: p.json<EarnRule[]>(),
    returnWindowDays: p.integer(),
    expiryMonths: p.integer().nullable(),
    tiers: p.json<TierRule[]>(),
    downgradePolicy: p.enum(['anniversary', 'never'] as const),
    maxTiersDown: p.integer(),
    /** Sandbox only: the program's test clock (null: real time). */
    testClockTime: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type LoyaltyProgram = InferEntity<typeof LoyaltyProgram>;

/** A reward of the catalog. `stock_remaining` changes only by the redemption's conditional UPDATE. */
export const LoyaltyReward = defineEntity({
  name: 'LoyaltyReward',
  tableName: 'loyalty_rewards',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string(),
    description: p.text().nullable(),
    cost: p.bigint('number'),
    expires: p.string().columnType('date').nullable(),
    stock: p.integer().nullable(),
    stockRemaining: p.integer().nullable(),
    redeemedCount: p.integer().default(0),
    status: p.enum(['active', 'archived'] as const),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type LoyaltyReward = InferEntity<typeof LoyaltyReward>;

/** A customer's loyalty account: balances that change only together with a ledger entry. Its id is the customer's. */
export const LoyaltyAccount = defineEntity({
  name: 'LoyaltyAccount',
  tableName: 'loyalty_accounts',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    pointsBalance: p.bigint('number'),
    pendingPoints: p.bigint('number'),
    shortfallPoints: p.bigint('number'),
    lifetimePoints: p.bigint('number'),
    tier: p.string(),
    tierReachedAt: p.datetime(),
    tierReviewAt: p.datetime().nullable(),
    workflowId: p.string(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type LoyaltyAccount = InferEntity<typeof LoyaltyAccount>;

export const GRANT_STATUSES = ['pending', 'available', 'spent', 'expired', 'reversed'] as const;

/** A lot of points: what was credited, what remains, when it becomes available and when it expires. */
export const LoyaltyGrant = defineEntity({
  name: 'LoyaltyGrant',
  tableName: 'loyalty_grants',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    source: p.enum(['award', 'order', 'adjustment'] as const),
    basePoints: p.bigint('number'),
    multiplier: p.string().columnType('numeric(8,4)'),
    tier: p.string(),
    tierMultiplier: p.string().columnType('numeric(8,4)'),
    points: p.bigint('number'),
    remainingPoints: p.bigint('number'),
    reversedPoints: p.bigint('number'),
    status: p.enum(GRANT_STATUSES),
    reason: p.string(),
    orderId: p.string().nullable(),
    paymentId: p.string().nullable(),
    orderAmount: p.bigint('number').nullable(),
    currency: p.string().nullable(),
    awardedAt: p.datetime(),
    availableAt: p.datetime(),
    expiresAt: p.datetime().nullable(),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
  },
});
export type LoyaltyGrant = InferEntity<typeof LoyaltyGrant>;

export const ENTRY_TYPES = ['grant', 'activation', 'redemption', 'expiry', 'reversal', 'adjustment'] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

/** One append-only ledger entry: the change to each bucket and the buckets after it. */
export const LoyaltyLedgerEntry = defineEntity({
  name: 'LoyaltyLedgerEntry',
  tableName: 'loyalty_ledger_entries',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    type: p.enum(ENTRY_TYPES),
    pointsChange: p.bigint('number'),
    pendingChange: p.bigint('number'),
    shortfallChange: p.bigint('number'),
    balanceAfter: p.bigint('number'),
    pendingAfter: p.bigint('number'),
    shortfallAfter: p.bigint('number'),
    grantId: p.string().nullable(),
    redemptionId: p.string().nullable(),
    orderId: p.string().nullable(),
    reason: p.string().nullable(),
    operator: p.string().nullable(),
    allocations: p.json<{ grant_id: string; points: number }[]>(),
    effectiveAt: p.datetime(),
    createdAt: p.datetime(),
  },
});
export type LoyaltyLedgerEntry = InferEntity<typeof LoyaltyLedgerEntry>;

export const LoyaltyRedemption = defineEntity({
  name: 'LoyaltyRedemption',
  tableName: 'loyalty_redemptions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    rewardId: p.string(),
    pointsUsed: p.bigint('number'),
    code: p.string(),
    balanceAfter: p.bigint('number'),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
  },
});
export type LoyaltyRedemption = InferEntity<typeof LoyaltyRedemption>;

/** What an operator did to a customer's loyalty account through the admin API, and why. */
export const LoyaltyAdminAction = defineEntity({
  name: 'LoyaltyAdminAction',
  tableName: 'loyalty_admin_actions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    action: p.string(),
    operator: p.string(),
    reason: p.text(),
    result: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
  },
});
export type LoyaltyAdminAction = InferEntity<typeof LoyaltyAdminAction>;
