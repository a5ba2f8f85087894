import type { Request } from 'express';
import { z } from 'zod';
import { nativePool } from '../../../db/pool.ts';
import { archiveReward, createReward, getReward, listRewards } from '../../../domain/rewards/catalog.ts';
import { withPrefix } from '../../../domain/rewards/ids.ts';
import { MAX_AWARD_POINTS, hasAtMostDecimals } from '../../../domain/rewards/points.ts';
import { loadProgram, programView, putProgram, requireSandbox } from '../../../domain/rewards/program.ts';
import {
  balanceSchema, grantSchema, ledgerEntrySchema, programSchema, redemptionSchema, rewardSchema, testClockSchema,
} from '../../../domain/rewards/schemas.ts';
import {
  advanceTestClock, awardPoints, getBalance, listLedger, redeemReward, type LoyaltyTemporal,
} from '../../../domain/rewards/service.ts';
import { ENTRY_TYPES } from '../../../domain/rewards/entities.ts';
import { DEFAULT_EARN_RULES, DEFAULT_EXPIRY_MONTHS, DEFAULT_RETURN_WINDOW_DAYS, DEFAULT_TIERS } from '../../../domain/rewards/points.ts';
import type { Currency } from '../../../domain/money.ts';
import { REWARDS_AREA } from '../../../workflows/rewards/shared.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listQuery, listRoute, pageOf } from '../../http/pagination.ts';
import { getRoute, route, type RouteSpec } from '../../http/route.ts';
import { csv, currency, int32, isoDate, metadata } from '../../http/schemas.ts';

const timestamp = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 timestamp such as 2025-03-14T09:30:00Z' }).transform((t) => new Date(t));
const id = z.string().min(1).max(64);
const decimal4 = (what: string) => z.number().refine((v) => hasAtMostDecimals(v, 4), `${what} has at most 4 decimal places`);

const customerParams = z.strictObject({ customer_id: id });
const rewardParams = z.strictObject({ reward_id: id });

const awardBody = z.strictObject({
  customer_id: id,
  points: int32({ min: 1, max: MAX_AWARD_POINTS, message: 'points is a whole number of points, e.g. 100' }),
  reason: z.string().trim().min(1, 'say why the points are awarded, e.g. "welcome bonus"').max(200),
  order_id: id.optional().describe('With an order the points stay pending until the program\'s return window closes; one award per order and reason.'),
  multiplier: decimal4('multiplier').pipe(z.number().min(1, 'multiplier is at least 1').max(10, 'multiplier is at most 10')).optional()
    .describe('1–10 (default 1), applied together with the tier\'s multiplier: credited = floor(points × multiplier × tier multiplier).'),
  expires_at: timestamp.optional().describe('Default: the program\'s points_expiry_months after now.'),
  metadata: metadata.optional(),
});

const redeemBody = z.strictObject({
  customer_id: id,
  reward_id: id,
  points_used: int32({ min: 1, message: 'points_used is a whole number of points: the reward\'s cost' }),
  metadata: metadata.optional(),
});

const tierBody = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'a lower-case name such as gold (letters, digits, _)'),
  threshold: int32({ message: 'threshold is a whole number of points' }),
  earn_multiplier: decimal4('earn_multiplier').pipe(z.number().min(1, 'earn_multiplier is at least 1').max(10, 'earn_multiplier is at most 10')),
});

const programBody = z.strictObject({
  earn_rules: z.array(z.strictObject({
    currency,
    points_per_unit: decimal4('points_per_unit').pipe(z.number().positive('points_per_unit is more than 0').max(10_000)),
  })).max(50).default(DEFAULT_EARN_RULES as { currency: Currency; points_per_unit: number }[])
    .refine((rules) => new Set(rules.map((r) => r.currency)).size === rules.length, 'one earn rule per currency'),
  return_window_days: int32({ max: 365 }).default(DEFAULT_RETURN_WINDOW_DAYS),
  points_expiry_months: int32({ min: 1, max: 120 }).nullable().default(DEFAULT_EXPIRY_MONTHS),
  tiers: z.array(tierBody).min(1).max(20).default([...DEFAULT_TIERS])
    .refine((tiers) => new Set(tiers.map((t) => t.name)).size === tiers.length, 'tier names are unique')
    .refine((tiers) => new Set(tiers.map((t) => t.threshold)).size === tiers.length, 'tier thresholds are unique')
    .refine((tiers) => tiers.some((t) => t.threshold === 0), 'the lowest tier has threshold 0 (every customer starts there)'),
  downgrade_policy: z.strictObject({
    type: z.enum(['anniversary', 'never']).default('anniversary'),
    max_tiers_down: int32({ min: 1, max: 20 }).default(1),
  }).default({ type: 'anniversary', max_tiers_down: 1 }),
});

const rewardBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(1000).optional(),
  cost: int32({ min: 1, message: 'cost is a whole number of points' }),
  expires: isoDate.optional().describe('Last day it can be redeemed.'),
  stock: int32({ max: 100_000_000 }).optional().describe('How many can ever be redeemed; omit for unlimited.'),
  metadata: metadata.optional(),
});

const ledgerQuery = z.strictObject({ ...listQuery, type: csv(z.enum(ENTRY_TYPES)).optional().describe('Comma-separated entry types.') });
const catalogQuery = z.strictObject({ ...listQuery, status: csv(z.enum(['active', 'archived'])).optional() });

function temporalOf(deps: AppDeps): LoyaltyTemporal {
  return { client: deps.temporal.client, taskQueue: deps.temporal.taskQueue(REWARDS_AREA) };
}

function requestKey(req: Request): string | null {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key ? key : null;
}

type Base = '/v3/rewards' | '/v3/loyalty';
const BASES: readonly [Base, string][] = [['/v3/rewards', 'Rewards'], ['/v3/loyalty', 'Loyalty']];

/** Each route under both names (the changelog's /v3/loyalty/ and the spec's /v3/rewards/): one implementation, two operations. */
function underBothNames(make: (base: Base, name: string) => RouteSpec<any, any, any>): RouteSpec<any, any, any>[] {
  return BASES.map(([base, name]) => make(base, name));
}

export const rewardsRoutes: RouteSpec<any, any, any>[] = [
  ...underBothNames((base, name) => getRoute({
    path: `${base}/program`, operationId: `get${name}Program`, tag: 'Rewards', summary: 'The loyalty program: earn rules, return window, expiry, tiers, downgrade policy',
    permission: 'rewards:read', response: programSchema,
    get: async ({ deps, auth }) => programView(await loadProgram(await nativePool(deps.orm), auth), auth),
  })),
  ...underBothNames((base, name) => route({
    method: 'put', path: `${base}/program`, operationId: `put${name}Program`, tag: 'Rewards',
    summary: 'Replace the loyalty program\'s rules (omitted fields take their defaults)', permission: 'rewards:write', status: 200,
    body: programBody, response: programSchema,
    handler: async ({ deps, auth, body }) => ({ body: await putProgram(await nativePool(deps.orm), auth, body) }),
  })),
  ...underBothNames((base, name) => route({
    method: 'post', path: `${base}/catalog`, operationId: `create${name}Reward`, tag: 'Rewards', summary: 'Add a reward to the catalog',
    permission: 'rewards:write', status: 201, body: rewardBody, response: rewardSchema,
    async handler({ deps, auth, body, resourceId }) {
      const reward = await createReward(await nativePool(deps.orm), auth, withPrefix('reward', await resourceId('event')), body);
      return { body: reward, headers: { Location: `${base}/catalog/${reward.id}` } };
    },
  })),
  ...underBothNames((base, name) => listRoute({
    path: `${base}/catalog`, operationId: `list${name}Rewards`, tag: 'Rewards', summary: 'List the rewards catalog',
    permission: 'rewards:read', item: rewardSchema, query: catalogQuery,
    list: async ({ deps, auth, query }) => listRewards(await nativePool(deps.orm), auth, { status: query.status }, pageOf(query)),
  })),
  ...underBothNames((base, name) => getRoute({
    path: `${base}/catalog/{reward_id}`, operationId: `get${name}Reward`, tag: 'Rewards', summary: 'Retrieve a reward',
    permission: 'rewards:read', readOnly: true, params: rewardParams, response: rewardSchema,
    get: async ({ deps, auth, params }) => getReward(await nativePool(deps.orm), auth, params.reward_id),
  })),
  ...underBothNames((base, name) => route({
    method: 'post', path: `${base}/catalog/{reward_id}/archive`, operationId: `archive${name}Reward`, tag: 'Rewards',
    summary: 'Archive a reward: it can no longer be redeemed', permission: 'rewards:write', status: 200,
    params: rewardParams, response: rewardSchema,
    handler: async ({ deps, auth, params }) => ({ body: await archiveReward(await nativePool(deps.orm), auth, params.reward_id) }),
  })),
  ...underBothNames((base, name) => route({
    method: 'post', path: `${base}/points/award`, operationId: `award${name}Points`, tag: 'Rewards',
    summary: 'Award points to a customer (201; 200 with the first grant when the order and reason were already awarded)',
    permission: 'rewards:write', status: 201, temporal: true, body: awardBody, response: grantSchema,
    responses: {
      200: { description: 'This order and reason (or this Idempotency-Key) were awarded before: the first grant', schema: grantSchema },
      404: { description: 'No such customer in this account and mode (`errors` names customer_id)' },
    },
    async handler({ deps, em, auth, body, req, requestId, resourceId }) {
      const { grant, duplicate } = await awardPoints(await nativePool(deps.orm), em(), temporalOf(deps), auth, body, {
        grantId: withPrefix('grant', await resourceId('event')), requestIdempotencyKey: requestKey(req), requestId,
      });
      return { status: duplicate ? 200 : 201, body: grant };
    },
  })),
  ...underBothNames((base, name) => getRoute({
    path: `${base}/customers/{customer_id}/balance`, operationId: `get${name}Balance`, tag: 'Rewards',
    summary: 'A customer\'s loyalty balance: available and pending points, tier, and the rewards the balance affords now',
    permission: 'rewards:read', params: customerParams, response: balanceSchema,
    get: async ({ deps, em, auth, params }) => getBalance(await nativePool(deps.orm), em(), auth, params.customer_id),
  })),
  ...underBothNames((base, name) => listRoute({
    path: `${base}/customers/{customer_id}/ledger`, operationId: `list${name}Ledger`, tag: 'Rewards',
    summary: 'A customer\'s points ledger (grants, activations, redemptions, expiries, reversals, adjustments), newest first',
    permission: 'rewards:read', params: customerParams, item: ledgerEntrySchema, query: ledgerQuery,
    list: async ({ deps, em, auth, params, query }) => listLedger(await nativePool(deps.orm), em(), auth, params.customer_id, { type: query.type }, pageOf(query)),
  })),
  ...underBothNames((base, name) => route({
    method: 'post', path: `${base}/redeem`, operationId: `redeem${name}Reward`, tag: 'Rewards',
    summary: 'Redeem points for a reward (points_used must be its cost); 409 insufficient_points when the balance does not cover it',
    permission: 'rewards:write', status: 201, body: redeemBody, response: redemptionSchema,
    responses: {
      404: { description: 'No such customer or reward in this account and mode (`errors` names the field)' },
      409: { description: 'insufficient_points (with points_balance), or reward_unavailable (archived, expired, out of stock)' },
    },
    async handler({ deps, auth, body, req, requestId, resourceId }) {
      const redemption = await redeemReward(await nativePool(deps.orm), auth, body, {
        redemptionId: withPrefix('redemption', await resourceId('event')), requestIdempotencyKey: requestKey(req), requestId,
      });
      return { body: redemption };
    },
  })),
  ...underBothNames((base, name) => route({
    method: 'post', path: `${base}/test_clock`, operationId: `advance${name}TestClock`, tag: 'Rewards',
    summary: 'Sandbox: start or advance the program\'s test clock; answers once every customer\'s pending, expiry and tier timers ran up to it',
    permission: 'rewards:write', status: 200, temporal: true, temporalWaitMs: () => 55_000,
    body: z.strictObject({ frozen_time: timestamp }), response: testClockSchema,
    async handler({ deps, auth, body }) {
      requireSandbox(auth);
      return { body: await advanceTestClock(await nativePool(deps.orm), temporalOf(deps), auth, body.frozen_time) };
    },
  })),
];
