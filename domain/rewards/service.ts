import type { EntityManager } from '@mikro-orm/postgresql';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy, type UpdateDefinition } from '@temporalio/common';
import type { Pool } from 'pg';
import { ApiError, notFound, validationFailed } from '../../platform/errors.ts';
import { searchAttributes, sendUpdate } from '../../platform/temporal-kit.ts';
import type { loyaltyWorkflow } from '../../workflows/rewards/loyalty.ts';
import {
  advanceClockUpdate, awardPointsUpdate, loyaltyWorkflowId, reversePointsUpdate,
  type AwardRequest, type GrantView, type LoyaltyProgress, type LoyaltyRef, type OrderEventInput,
} from '../../workflows/rewards/shared.ts';
import { checkCustomers } from '../customers/public.ts';
import { exponent } from '../money.ts';
import type { Scope } from '../scope.ts';
import { affordableRewards } from './catalog.ts';
import { withPrefix } from './ids.ts';
import { earnedInYearOf, entryView, redeem, type RedeemInput } from './ledger.ts';
import { loadProgram, programNow, setProgramClock } from './program.ts';
import { orderPoints, sortedTiers, tierIndex, tierNamed, toDate } from './points.ts';
import type { BalanceView, LedgerEntryView, RedemptionView, TestClockView } from './schemas.ts';

/**
 * The rewards services the API, the admin API and the activities share. Changes that may set a
 * timer (awards, reversals, adjustments, tier reviews) go through the customer's loyalty workflow
 * with update-with-start, so no grant can exist without the workflow that makes it available and
 * expires it; redemptions need no timer and run as one SQL transaction.
 */
export interface LoyaltyTemporal {
  client: Client;
  /** The rewards area's task queue. */
  taskQueue: string;
}

/** Sends `update` to the customer's loyalty workflow, starting it if it is not running. */
export async function onLoyaltyWorkflow<Ret, Args extends unknown[]>(
  temporal: LoyaltyTemporal, ref: LoyaltyRef, clockNow: number | null, update: UpdateDefinition<Ret, Args>, args: Args,
): Promise<Ret> {
  const start = new WithStartWorkflowOperation<typeof loyaltyWorkflow>('loyaltyWorkflow', {
    workflowId: loyaltyWorkflowId(ref.customerId),
    taskQueue: temporal.taskQueue,
    args: [{ ...ref, clockNow }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // The ledger is in PostgreSQL: a run that was terminated by hand may be replaced by a new one.
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    typedSearchAttributes: searchAttributes({ accountId: ref.accountId, livemode: ref.livemode, customerId: ref.customerId, resourceId: ref.customerId }),
  });
  return sendUpdate(() => temporal.client.workflow.executeUpdateWithStart(update, { args: args as never, startWorkflowOperation: start }) as Promise<Ret>, {
    resource: `Loyalty account of ${ref.customerId}`,
    suggestion: 'Read the customer\'s balance (GET /v3/rewards/customers/{customer_id}/balance) and try again.',
    currentState: async () => 'active',
  });
}

/** 404 for a customer that is not in this account and mode, naming the field it came from. */
export async function requireCustomer(em: EntityManager, customerId: string, path: string | null): Promise<void> {
  const missing = await checkCustomers(em, [[path ?? 'customer_id', customerId]]);
  if (!missing.length) return;
  const err = notFound('customer', customerId);
  throw path ? new ApiError({ status: 404, code: err.code, title: err.title, detail: err.detail, suggestion: err.suggestion, errors: missing }) : err;
}

export interface AwardBody {
  customer_id: string;
  points: number;
  reason: string;
  order_id?: string | undefined;
  multiplier?: number | undefined;
  expires_at?: Date | undefined;
  metadata?: Record<string, string> | undefined;
}

/**
 * POST /v3/rewards/points/award. The grant id comes from the request (the same for every retry
 * with one Idempotency-Key). A second award for the same order and reason answers the first.
 */
export async function awardPoints(
  pool: Pool, em: EntityManager, temporal: LoyaltyTemporal, scope: Scope,
  body: AwardBody, ids: { grantId: string; requestIdempotencyKey: string | null; requestId: string | null },
): Promise<{ grant: GrantView; duplicate: boolean }> {
  await requireCustomer(em, body.customer_id, 'customer_id');
  const program = await loadProgram(pool, scope);
  const now = programNow(program);
  if (body.expires_at && body.expires_at.getTime() <= now.getTime()) {
    throw validationFailed([{ path: 'expires_at', message: `is in the past (now is ${now.toISOString()}); send a future timestamp or omit it for the program's default expiry` }]);
  }
  const request: AwardRequest = {
    grantId: ids.grantId, source: body.order_id ? 'order' : 'award', points: body.points, multiplier: body.multiplier ?? 1, reason: body.reason,
    orderId: body.order_id ?? null, paymentId: null, orderAmount: null, currency: null, expiresAt: body.expires_at?.getTime() ?? null,
    metadata: body.metadata ?? {}, requestIdempotencyKey: ids.requestIdempotencyKey, requestId: ids.requestId,
    at: now.getTime(), clockNow: program.testClockTime?.getTime() ?? null,
  };
  return onLoyaltyWorkflow(temporal, { ...scope, customerId: body.customer_id }, request.clockNow, awardPointsUpdate, [request]);
}

/** POST /v3/rewards/redeem: `points_used` must be the reward's cost. */
export async function redeemReward(
  pool: Pool, scope: Scope,
  body: { customer_id: string; reward_id: string; points_used: number; metadata?: Record<string, string> | undefined },
  ids: { redemptionId: string; requestIdempotencyKey: string | null; requestId: string | null },
): Promise<RedemptionView> {
  // One round trip for the checks: the customer, the reward's cost and the program's clock.
  const { rows: [found] } = await pool.query<{ customer: boolean; cost: string | null; clock: Date | string | null }>(
    `select exists (select 1 from customers where id = $1 and account_id = $3 and livemode = $4) as customer,
            (select cost from loyalty_rewards where id = $2 and account_id = $3 and livemode = $4) as cost,
            (select test_clock_time from loyalty_programs where account_id = $3 and livemode = $4) as clock`,
    [body.customer_id, body.reward_id, scope.accountId, scope.livemode]);
  if (!found!.customer) {
    const err = notFound('customer', body.customer_id);
    throw new ApiError({ ...err, errors: [{ path: 'customer_id', message: `no customer with id '${body.customer_id}' exists in this account and mode` }] });
  }
  if (found!.cost === null) {
    const err = notFound('reward', body.reward_id);
    throw new ApiError({
      ...err, suggestion: 'List the catalog (GET /v3/rewards/catalog) for the rewards of this account and mode.',
      errors: [{ path: 'reward_id', message: `no reward with id '${body.reward_id}' exists in this account and mode` }],
    });
  }
  const cost = Number(found!.cost);
  if (body.points_used !== cost) {
    throw validationFailed([{ path: 'points_used', message: `must equal the reward's cost: ${cost} points` }], `Reward ${body.reward_id} costs ${cost} points; points_used was ${body.points_used}.`);
  }
  const input: RedeemInput = {
    redemptionId: ids.redemptionId, customerId: body.customer_id, rewardId: body.reward_id, cost, metadata: body.metadata ?? {},
    requestIdempotencyKey: ids.requestIdempotencyKey, requestId: ids.requestId, at: found!.clock ? toDate(found!.clock) : new Date(),
  };
  return redeem(pool, scope, input);
}

/** The spec's Loyalty balance, with the tier progress, the next expiry and what the balance affords now. */
export async function getBalance(pool: Pool, em: EntityManager, scope: Scope, customerId: string): Promise<BalanceView> {
  await requireCustomer(em, customerId, null);
  return (await balancesOf(pool, scope, [customerId]))[0]!;
}

/**
 * The balances of many customers (known to exist in the scope), in the order asked, in a fixed
 * number of statements whatever their number (the program, the accounts, the points earned in 12
 * months, the next expiries, the affordable rewards): GraphQL's `Customer.loyalty` loader.
 */
export async function balancesOf(pool: Pool, scope: Scope, customerIds: readonly string[]): Promise<BalanceView[]> {
  if (!customerIds.length) return [];
  const program = await loadProgram(pool, scope);
  const now = programNow(program);
  const ids = [...new Set(customerIds)];
  const { rows: accountRows } = await pool.query<{ id: string; points_balance: string; pending_points: string; shortfall_points: string; lifetime_points: string; tier: string; tier_review_at: Date | null }>(
    'select * from loyalty_accounts where id = any($1::text[]) and account_id = $2 and livemode = $3', [ids, scope.accountId, scope.livemode]);
  const accounts = new Map(accountRows.map((a) => [a.id, a]));
  const withAccount = ids.filter((id) => accounts.has(id));
  const earned = withAccount.length ? await earnedInYearOf(pool, scope, withAccount, now) : new Map<string, number>();
  const { rows: expiring } = withAccount.length ? await pool.query<{ customer_id: string; points: string; expires_at: Date }>(
    `select distinct on (customer_id) customer_id, sum(remaining_points) as points, expires_at from loyalty_grants
      where account_id = $1 and livemode = $2 and customer_id = any($3::text[]) and status = 'available' and remaining_points > 0 and expires_at is not null
      group by customer_id, expires_at order by customer_id, expires_at`, [scope.accountId, scope.livemode, withAccount]) : { rows: [] };
  const nextExpiry = new Map(expiring.map((e) => [e.customer_id, e]));
  const spendable = (id: string) => {
    const a = accounts.get(id);
    return a && Number(a.shortfall_points) === 0 ? Number(a.points_balance) : 0;
  };
  // The cheapest rewards the richest balance affords: each customer's are a prefix of them (cheapest first).
  const most = Math.max(0, ...ids.map(spendable));
  const rewards = most > 0 ? await affordableRewards(pool, scope, most, now.toISOString().slice(0, 10)) : [];
  const tiers = sortedTiers(program.tiers);
  return customerIds.map((customerId) => {
    const account = accounts.get(customerId);
    const current = account ? tierNamed(tiers, account.tier) : tiers[0]!;
    const earnedPoints = earned.get(customerId) ?? 0;
    const next = tiers[tierIndex(tiers, current.name) + 1] ?? null;
    const expiry = nextExpiry.get(customerId);
    const affordable = spendable(customerId);
    return {
      object: 'loyalty_balance', livemode: scope.livemode, customer_id: customerId, points_balance: Number(account?.points_balance ?? 0),
      tier: { current: current.name, points_to_next: next ? Math.max(next.threshold - earnedPoints, 0) : null, next_tier: next?.name ?? null },
      lifetime_points: Number(account?.lifetime_points ?? 0), pending_points: Number(account?.pending_points ?? 0),
      shortfall_points: Number(account?.shortfall_points ?? 0),
      points_earned_12m: earnedPoints, tier_review_at: account?.tier_review_at ? toDate(account.tier_review_at).toISOString() : null,
      next_expiry: expiry ? { points: Number(expiry.points), expires_at: toDate(expiry.expires_at).toISOString() } : null,
      available_rewards: affordable > 0 ? rewards.filter((r) => r.cost <= affordable) : [],
    };
  });
}

/** The customer's ledger, newest first (or oldest first), optionally of some entry types. */
export async function listLedger(
  pool: Pool, em: EntityManager, scope: Scope, customerId: string, filters: { type?: LedgerEntryView['type'][] | undefined },
  page: { after: string | undefined; direction: 'asc' | 'desc'; limit: number },
): Promise<LedgerEntryView[]> {
  await requireCustomer(em, customerId, null);
  const values: unknown[] = [scope.accountId, scope.livemode, customerId];
  let where = 'account_id = $1 and livemode = $2 and customer_id = $3';
  if (page.after) {
    values.push(page.after);
    where += ` and id ${page.direction === 'desc' ? '<' : '>'} $${values.length}`;
  }
  if (filters.type) {
    values.push(filters.type);
    where += ` and type = any($${values.length}::text[])`;
  }
  values.push(page.limit + 1);
  const { rows } = await pool.query(`select * from loyalty_ledger_entries where ${where} order by id ${page.direction} limit $${values.length}`, values);
  return rows.map((r) => entryView(r, scope));
}

/**
 * Sandbox: starts or advances the program's test clock, then has every customer's loyalty
 * workflow run what is due up to the new time; answers once all have.
 */
export async function advanceTestClock(pool: Pool, temporal: LoyaltyTemporal, scope: Scope, to: Date): Promise<TestClockView> {
  await setProgramClock(pool, scope, to);
  const { rows } = await pool.query<{ id: string }>('select id from loyalty_accounts where account_id = $1 and livemode = $2 order by id', [scope.accountId, scope.livemode]);
  let next = 0;
  const work = async () => {
    while (next < rows.length) {
      const customerId = rows[next++]!.id;
      await onLoyaltyWorkflow<LoyaltyProgress, [{ now: number }]>(temporal, { ...scope, customerId }, to.getTime(), advanceClockUpdate, [{ now: to.getTime() }]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, rows.length) }, work));
  return { object: 'loyalty_test_clock', livemode: false, frozen_time: to.toISOString(), customers: rows.length };
}

/**
 * The activity behind one order or payment event: a paid order earns by the program's earn rule
 * for its currency (none: nothing happens), a refund or cancellation reverses what it earned.
 */
export async function applyOrderEvent(pool: Pool, temporal: LoyaltyTemporal, input: OrderEventInput): Promise<string> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const ref = { ...scope, customerId: input.customerId };
  const program = await loadProgram(pool, scope);
  const now = programNow(program);
  const clockNow = program.testClockTime?.getTime() ?? null;
  if (input.action === 'earn') {
    const rule = program.earnRules.find((r) => r.currency === input.currency);
    const points = rule ? orderPoints(input.amount, exponent(input.currency), rule.points_per_unit) : 0;
    if (points <= 0) return rule ? 'order earns no points' : `no earn rule for ${input.currency}`;
    const result = await onLoyaltyWorkflow(temporal, ref, clockNow, awardPointsUpdate, [{
      grantId: withPrefix('grant', input.eventId), source: 'order', points, multiplier: 1, reason: input.reason, orderId: input.orderId,
      paymentId: input.paymentId, orderAmount: input.amount, currency: input.currency, expiresAt: null, metadata: {},
      requestIdempotencyKey: null, requestId: input.requestId, at: now.getTime(), clockNow,
    }]);
    return result.duplicate ? `already earned: ${result.grant.id}` : `earned ${result.grant.credited_points} points: ${result.grant.id}`;
  }
  const entries = await onLoyaltyWorkflow(temporal, ref, clockNow, reversePointsUpdate, [{
    orderId: input.orderId, paymentId: input.paymentId,
    share: input.amountRefunded === null ? 'all' : { part: input.amountRefunded, whole: input.amount },
    reason: input.reason, at: now.getTime(), requestId: input.requestId, clockNow,
  }]);
  return entries.length ? `reversed in ${entries.map((e) => e.id).join(', ')}` : 'nothing more to reverse';
}
