import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { ApiError, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { loyaltyWorkflowId } from '../../workflows/rewards/shared.ts';
import type { EventType } from '../events/catalog.ts';
import type { Scope } from '../scope.ts';
import { rewardsId, withPrefix } from './ids.ts';
import { loadProgram, type Program } from './program.ts';
import {
  addDays, addMonths, creditedPoints, toDate, proportionalPoints, sortedTiers, tierFor, tierIndex, tierNamed,
} from './points.ts';
import type { GrantView, LedgerEntryView, RedemptionView, TierChangeView } from './schemas.ts';
import { isUniqueViolation } from '../../db/errors.ts';

/**
 * The points ledger, in SQL. Every change of a customer's buckets (available, pending, shortfall)
 * is one transaction that first locks the customer's loyalty account row, so changes of one
 * customer are serialized while different customers never wait for each other; the bucket
 * columns change only in `applyChange`, which writes the ledger entry in the same statement pair.
 * Grants are lots: they keep their remaining points, availability and expiry; spending takes
 * the earliest-expiring available grants first.
 */

type Db = PoolClient;

export async function inTransaction<T>(pool: Pool, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await pool.connect();
  try {
    await db.query('begin');
    const result = await fn(db);
    await db.query('commit');
    return result;
  } catch (err) {
    await db.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
}

/** Records an event in the outbox, in the caller's transaction (the dispatcher is notified on commit). */
export async function recordOutboxEvent(db: Db, scope: Scope, type: EventType, object: object, customerId: string, requestId: string | null = null): Promise<void> {
  await db.query(
    `insert into events (id, account_id, livemode, type, data, customer_id, request_id, dispatched_at, synthetic, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, null, false, now())`,
    [newId('event'), scope.accountId, scope.livemode, type, JSON.stringify({ object }), customerId, requestId],
  );
}

interface AccountRow {
  customer_id: string;
  points_balance: string;
  pending_points: string;
  shortfall_points: string;
  lifetime_points: string;
  tier: string;
  tier_reached_at: Date;
  tier_review_at: Date | null;
}

/** The customer's loyalty account, locked for this transaction (opened in the lowest tier when it has none). */
async function lockAccount(db: Db, scope: Scope, customerId: string, program: Program, at: Date): Promise<AccountRow> {
  await db.query(
    `insert into loyalty_accounts (id, account_id, livemode, customer_id, tier, tier_reached_at, workflow_id, created_at, updated_at)
     values ($1, $2, $3, $1, $4, $5, $6, $5, now()) on conflict (id) do nothing`,
    [customerId, scope.accountId, scope.livemode, sortedTiers(program.tiers)[0]!.name, at, loyaltyWorkflowId(customerId)],
  );
  const { rows } = await db.query<AccountRow>(
    'select * from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3 for update', [customerId, scope.accountId, scope.livemode]);
  if (!rows[0]) throw notFound('customer', customerId);
  return rows[0];
}

interface EntryRow {
  id: string;
  customer_id: string;
  type: LedgerEntryView['type'];
  points_change: string;
  pending_change: string;
  shortfall_change: string;
  balance_after: string;
  pending_after: string;
  shortfall_after: string;
  grant_id: string | null;
  redemption_id: string | null;
  order_id: string | null;
  reason: string | null;
  allocations: { grant_id: string; points: number }[];
  effective_at: Date;
}

export function entryView(r: EntryRow, scope: Scope): LedgerEntryView {
  return {
    id: r.id, object: 'loyalty_ledger_entry', livemode: scope.livemode, customer_id: r.customer_id, type: r.type,
    points_change: Number(r.points_change), pending_change: Number(r.pending_change), shortfall_change: Number(r.shortfall_change),
    balance_after: Number(r.balance_after), pending_after: Number(r.pending_after), shortfall_after: Number(r.shortfall_after),
    grant_id: r.grant_id, redemption_id: r.redemption_id, order_id: r.order_id, reason: r.reason, allocations: r.allocations,
    created_at: toDate(r.effective_at).toISOString(),
  };
}

interface Change {
  /** A deterministic id when a retried step must find its entry (default: a new id). */
  entryId?: string;
  type: LedgerEntryView['type'];
  points?: number;
  pending?: number;
  shortfall?: number;
  lifetime?: number;
  grantId?: string | null;
  redemptionId?: string | null;
  orderId?: string | null;
  reason?: string | null;
  operator?: string | null;
  allocations?: { grant_id: string; points: number }[];
  at: Date;
}

/** Changes the buckets and appends the entry that records it: the only writer of the bucket columns besides `redeem`'s guarded update. */
async function applyChange(db: Db, scope: Scope, customerId: string, c: Change): Promise<LedgerEntryView> {
  const { rows } = await db.query<{ points_balance: string; pending_points: string; shortfall_points: string }>(
    `update loyalty_accounts set points_balance = points_balance + $4, pending_points = pending_points + $5,
            shortfall_points = shortfall_points + $6, lifetime_points = lifetime_points + $7, updated_at = now()
      where id = $1 and account_id = $2 and livemode = $3 returning points_balance, pending_points, shortfall_points`,
    [customerId, scope.accountId, scope.livemode, c.points ?? 0, c.pending ?? 0, c.shortfall ?? 0, c.lifetime ?? 0],
  );
  const after = rows[0]!;
  return insertEntry(db, scope, customerId, c, after);
}

async function insertEntry(
  db: Db, scope: Scope, customerId: string, c: Change, after: { points_balance: string; pending_points: string; shortfall_points: string },
): Promise<LedgerEntryView> {
  const { rows } = await db.query<EntryRow>(
    `insert into loyalty_ledger_entries (id, account_id, livemode, customer_id, type, points_change, pending_change, shortfall_change,
       balance_after, pending_after, shortfall_after, grant_id, redemption_id, order_id, reason, operator, allocations, effective_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) returning *`,
    [c.entryId ?? rewardsId('entry'), scope.accountId, scope.livemode, customerId, c.type, c.points ?? 0, c.pending ?? 0, c.shortfall ?? 0,
      after.points_balance, after.pending_points, after.shortfall_points, c.grantId ?? null, c.redemptionId ?? null, c.orderId ?? null,
      c.reason ?? null, c.operator ?? null, JSON.stringify(c.allocations ?? []), c.at],
  );
  return entryView(rows[0]!, scope);
}

/**
 * Takes up to `points` from the customer's available grants, earliest expiry first (then oldest),
 * in one statement. The caller holds the account lock, so no other transaction changes these
 * grants meanwhile. Returns what it took from each grant.
 */
async function spendGrants(db: Db, scope: Scope, customerId: string, points: number): Promise<{ grant_id: string; points: number }[]> {
  if (points <= 0) return [];
  const { rows } = await db.query<{ id: string; taken: string }>(
    `with ordered as (
       select id, remaining_points,
              sum(remaining_points) over (order by expires_at asc nulls last, awarded_at, id) as running
         from loyalty_grants
        where account_id = $1 and livemode = $2 and customer_id = $3 and status = 'available' and remaining_points > 0
     ), take as (
       select id, least(remaining_points, $4::bigint - (running - remaining_points)) as taken
         from ordered where running - remaining_points < $4::bigint
     )
     update loyalty_grants g
        set remaining_points = g.remaining_points - t.taken,
            status = case when g.remaining_points - t.taken = 0 then 'spent' else g.status end
       from take t where g.id = t.id
     returning g.id, t.taken`,
    [scope.accountId, scope.livemode, customerId, points],
  );
  return rows.map((r) => ({ grant_id: r.id, points: Number(r.taken) })).sort((a, b) => (a.grant_id < b.grant_id ? -1 : 1));
}

// ---- Grants ---------------------------------------------------------------------------------

interface GrantRow {
  id: string;
  customer_id: string;
  source: GrantView['source'];
  base_points: string;
  multiplier: string;
  tier: string;
  tier_multiplier: string;
  points: string;
  remaining_points: string;
  reversed_points: string;
  status: GrantView['status'];
  reason: string;
  order_id: string | null;
  payment_id: string | null;
  order_amount: string | null;
  available_at: Date;
  expires_at: Date | null;
  metadata: Record<string, string>;
  awarded_at: Date;
}

export function grantView(g: GrantRow, scope: Scope): GrantView {
  return {
    id: g.id, object: 'loyalty_grant', livemode: scope.livemode, customer_id: g.customer_id, source: g.source,
    points: Number(g.base_points), multiplier: Number(g.multiplier), tier: g.tier, tier_multiplier: Number(g.tier_multiplier),
    credited_points: Number(g.points), remaining_points: Number(g.remaining_points), reversed_points: Number(g.reversed_points),
    status: g.status, reason: g.reason, order_id: g.order_id, available_at: toDate(g.available_at).toISOString(),
    expires_at: g.expires_at ? toDate(g.expires_at).toISOString() : null, workflow_id: loyaltyWorkflowId(g.customer_id), metadata: g.metadata,
    created_at: toDate(g.awarded_at).toISOString(),
  };
}

export interface AwardInput {
  accountId: string;
  livemode: boolean;
  grantId: string;
  customerId: string;
  source: 'award' | 'order' | 'adjustment';
  points: number;
  /** A decimal with at most 4 places, 1–10. */
  multiplier: number;
  reason: string;
  orderId: string | null;
  paymentId: string | null;
  orderAmount: number | null;
  currency: string | null;
  /** ms; null: the program's default expiry. */
  expiresAt: number | null;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
  operator?: string | null;
  /** When the award takes effect (ms): the program's clock in the sandbox. */
  at: number;
}

export interface AwardResult {
  grant: GrantView;
  /** An earlier award for the same order and reason (or the same request) answered instead. */
  duplicate: boolean;
  nextDueAt: number | null;
}

async function findGrant(db: Db, scope: Scope, where: string, values: unknown[]): Promise<GrantRow | undefined> {
  const { rows } = await db.query<GrantRow>(`select * from loyalty_grants where account_id = $1 and livemode = $2 and ${where}`, [scope.accountId, scope.livemode, ...values]);
  return rows[0];
}

/**
 * Credits an award: floor(points × multiplier × tier multiplier) in the customer's current tier.
 * With an order it stays pending until the return window closes; otherwise it is available at
 * once (paying back any shortfall first) and may lift the customer's tier. One grant per order
 * and reason, and per request key: a repeat answers the first.
 */
export async function recordAward(pool: Pool, input: AwardInput): Promise<AwardResult> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const existing = async (db: Db): Promise<AwardResult | null> => {
    const same = await findGrant(db, scope, 'id = $3', [input.grantId]);
    if (same) return { grant: grantView(same, scope), duplicate: false, nextDueAt: await nextDueAt(db, scope, input.customerId) };
    const first = input.orderId !== null
      ? await findGrant(db, scope, 'order_id = $3 and reason = $4', [input.orderId, input.reason])
      : input.requestIdempotencyKey !== null ? await findGrant(db, scope, 'request_idempotency_key = $3', [input.requestIdempotencyKey]) : undefined;
    if (first) return { grant: grantView(first, scope), duplicate: true, nextDueAt: await nextDueAt(db, scope, input.customerId) };
    return null;
  };
  try {
    return await inTransaction(pool, async (db) => {
      const prior = await existing(db);
      if (prior) return prior;
      const program = await loadProgram(db, scope);
      const at = new Date(input.at);
      const account = await lockAccount(db, scope, input.customerId, program, at);
      const tier = input.source === 'adjustment' ? { name: account.tier, earn_multiplier: 1 } : tierNamed(program.tiers, account.tier);
      const credited = creditedPoints(input.points, input.multiplier, tier.earn_multiplier);
      const pending = input.orderId !== null && program.returnWindowDays > 0;
      const availableAt = pending ? addDays(at, program.returnWindowDays) : at;
      const expiresAt = input.expiresAt !== null ? new Date(input.expiresAt) : program.expiryMonths ? addMonths(at, program.expiryMonths) : null;
      if (expiresAt && expiresAt.getTime() <= availableAt.getTime()) {
        throw new ApiError({
          status: 422, code: 'validation_failed', title: 'Validation Failed',
          detail: `The points would expire (${expiresAt.toISOString()}) before they become available (${availableAt.toISOString()}).`,
          suggestion: 'Send an expires_at after the return window closes, or omit it for the program\'s default expiry.',
          errors: [{ path: 'expires_at', message: `must be after ${availableAt.toISOString()}` }],
        });
      }
      const repay = pending ? 0 : Math.min(Number(account.shortfall_points), credited);
      const remaining = credited - repay;
      const status = pending ? 'pending' : remaining === 0 ? 'spent' : 'available';
      const { rows } = await db.query<GrantRow>(
        `insert into loyalty_grants (id, account_id, livemode, customer_id, source, base_points, multiplier, tier, tier_multiplier, points,
           remaining_points, reversed_points, status, reason, order_id, payment_id, order_amount, currency, awarded_at, available_at, expires_at,
           request_idempotency_key, metadata, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, now()) returning *`,
        [input.grantId, scope.accountId, scope.livemode, input.customerId, input.source, input.points, input.multiplier.toFixed(4), tier.name,
          tier.earn_multiplier.toFixed(4), credited, remaining, status, input.reason, input.orderId, input.paymentId, input.orderAmount,
          input.currency, at, availableAt, expiresAt, input.requestIdempotencyKey, JSON.stringify(input.metadata)],
      );
      const grant = rows[0]!;
      const type = input.source === 'adjustment' ? 'adjustment' : 'grant';
      await applyChange(db, scope, input.customerId, pending
        ? { type, pending: credited, grantId: grant.id, orderId: input.orderId, reason: input.reason, operator: input.operator, at }
        : {
          type, points: remaining, shortfall: -repay, lifetime: credited, grantId: grant.id, orderId: input.orderId, reason: input.reason,
          operator: input.operator, at, allocations: repay ? [{ grant_id: grant.id, points: repay }] : [],
        });
      const view = grantView(grant, scope);
      await recordOutboxEvent(db, scope, 'rewards.points.awarded', view, input.customerId, input.requestId);
      if (!pending) await liftTier(db, scope, input.customerId, program, at, input.requestId);
      return { grant: view, duplicate: false, nextDueAt: await nextDueAt(db, scope, input.customerId) };
    });
  } catch (err) {
    // Two awards for the same order and reason (or request key) at once: the loser answers the winner's grant.
    if (isUniqueViolation(err)) {
      const db = await pool.connect();
      try {
        const prior = await existing(db);
        if (prior) return prior;
      } finally {
        db.release();
      }
    }
    throw err;
  }
}

// ---- Tiers ----------------------------------------------------------------------------------

/** Points earned (awards and orders, net of reversals, once available) in the 12 months up to `at`. */
export async function earnedInYear(db: Pick<Pool | PoolClient, 'query'>, scope: Scope, customerId: string, at: Date): Promise<number> {
  return (await earnedInYearOf(db, scope, [customerId], at)).get(customerId) ?? 0;
}

/** `earnedInYear` of many customers in one statement (customers without grants are absent: 0). */
export async function earnedInYearOf(db: Pick<Pool | PoolClient, 'query'>, scope: Scope, customerIds: readonly string[], at: Date): Promise<Map<string, number>> {
  const { rows } = await db.query<{ customer_id: string; earned: string }>(
    `select customer_id, coalesce(sum(points - reversed_points), 0) as earned from loyalty_grants
      where account_id = $1 and livemode = $2 and customer_id = any($3::text[]) and source in ('award', 'order') and status <> 'pending'
        and awarded_at > $4::timestamptz - interval '12 months' and awarded_at <= $4::timestamptz
      group by customer_id`,
    [scope.accountId, scope.livemode, [...customerIds], at],
  );
  return new Map(rows.map((r) => [r.customer_id, Number(r.earned)]));
}

async function changeTier(
  db: Db, scope: Scope, customerId: string, program: Program, from: string, to: string, earned: number, at: Date, requestId: string | null,
): Promise<TierChangeView> {
  const lowest = sortedTiers(program.tiers)[0]!.name;
  const reviewAt = program.downgradePolicy === 'anniversary' && to !== lowest ? addMonths(at, 12) : null;
  await db.query(
    `update loyalty_accounts set tier = $4, tier_reached_at = $5, tier_review_at = $6, updated_at = now()
      where id = $1 and account_id = $2 and livemode = $3`,
    [customerId, scope.accountId, scope.livemode, to, at, reviewAt],
  );
  const change: TierChangeView = {
    object: 'loyalty_tier_change', livemode: scope.livemode, customer_id: customerId, previous_tier: from, tier: to,
    direction: tierIndex(program.tiers, to) > tierIndex(program.tiers, from) ? 'upgrade' : 'downgrade',
    points_earned_12m: earned, tier_review_at: reviewAt?.toISOString() ?? null, changed_at: at.toISOString(),
  };
  await recordOutboxEvent(db, scope, 'loyalty.tier.changed', change, customerId, requestId);
  return change;
}

/** Upgrades at once when the points earned in the last 12 months reach a higher tier (several tiers at once if earned). */
async function liftTier(db: Db, scope: Scope, customerId: string, program: Program, at: Date, requestId: string | null): Promise<TierChangeView | null> {
  const { rows } = await db.query<{ tier: string }>('select tier from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3',
    [customerId, scope.accountId, scope.livemode]);
  const current = tierNamed(program.tiers, rows[0]!.tier);
  const earned = await earnedInYear(db, scope, customerId, at);
  const qualified = tierFor(program.tiers, earned);
  if (tierIndex(program.tiers, qualified.name) <= tierIndex(program.tiers, current.name)) return null;
  return changeTier(db, scope, customerId, program, rows[0]!.tier, qualified.name, earned, at, requestId);
}

/**
 * The anniversary review: a customer whose last 12 months no longer reach the tier goes down, by
 * at most `max_tiers_down` tiers; one who still qualifies keeps it until the next anniversary.
 */
async function reviewTier(db: Db, scope: Scope, customerId: string, program: Program, at: Date, forced: boolean): Promise<TierChangeView | null> {
  const { rows } = await db.query<{ tier: string; tier_review_at: Date | null; tier_reached_at: Date | string }>(
    'select tier, tier_review_at, tier_reached_at from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3', [customerId, scope.accountId, scope.livemode]);
  const account = rows[0]!;
  // An operator's re-evaluation retried after its first attempt committed: the tier changed at this very time already.
  if (forced && toDate(account.tier_reached_at).getTime() >= at.getTime()) return null;
  const tiers = sortedTiers(program.tiers);
  const current = tierNamed(tiers, account.tier);
  const earned = await earnedInYear(db, scope, customerId, at);
  const qualified = tierFor(tiers, earned);
  const ci = tierIndex(tiers, current.name);
  const qi = tierIndex(tiers, qualified.name);
  if (qi > ci) return changeTier(db, scope, customerId, program, account.tier, qualified.name, earned, at, null);
  if (qi < ci && program.downgradePolicy === 'anniversary') {
    const target = tiers[Math.max(qi, ci - program.maxTiersDown)]!;
    return changeTier(db, scope, customerId, program, account.tier, target.name, earned, at, null);
  }
  // Still qualifies (or the policy never downgrades): the next review is the next anniversary.
  const next = program.downgradePolicy === 'never' || ci === 0 ? null
    : forced ? account.tier_review_at : addMonths(account.tier_review_at ? toDate(account.tier_review_at) : at, 12);
  await db.query('update loyalty_accounts set tier_review_at = $4, updated_at = now() where id = $1 and account_id = $2 and livemode = $3',
    [customerId, scope.accountId, scope.livemode, next]);
  return null;
}

// ---- Time-driven work -----------------------------------------------------------------------

/** When the customer's next timed change is due (ms): a pending grant's availability, a grant's expiry or a tier review. */
export async function nextDueAt(db: Pick<Pool | PoolClient, 'query'>, scope: Scope, customerId: string): Promise<number | null> {
  const { rows } = await db.query<{ due: Date | null }>(
    `select least(
       (select min(available_at) from loyalty_grants where account_id = $1 and livemode = $2 and customer_id = $3 and status = 'pending'),
       (select min(expires_at) from loyalty_grants where account_id = $1 and livemode = $2 and customer_id = $3
          and status in ('pending', 'available') and remaining_points > 0),
       (select tier_review_at from loyalty_accounts where id = $3 and account_id = $1 and livemode = $2)) as due`,
    [scope.accountId, scope.livemode, customerId],
  );
  return rows[0]?.due ? toDate(rows[0].due).getTime() : null;
}

type DueItem = { kind: 'activation' | 'expiry'; grant: GrantRow; at: Date } | { kind: 'review'; at: Date };

async function earliestDue(db: Db, scope: Scope, customerId: string, now: Date): Promise<DueItem | null> {
  const items: DueItem[] = [];
  const pending = await findGrant(db, scope, `customer_id = $3 and status = 'pending' and available_at <= $4 order by available_at, id limit 1`, [customerId, now]);
  if (pending) items.push({ kind: 'activation', grant: pending, at: toDate(pending.available_at) });
  const expiring = await findGrant(db, scope,
    `customer_id = $3 and status in ('pending', 'available') and remaining_points > 0 and expires_at <= $4 order by expires_at, id limit 1`, [customerId, now]);
  if (expiring) items.push({ kind: 'expiry', grant: expiring, at: toDate(expiring.expires_at!) });
  const { rows } = await db.query<{ tier_review_at: Date | null }>(
    'select tier_review_at from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3 and tier_review_at <= $4',
    [customerId, scope.accountId, scope.livemode, now]);
  if (rows[0]?.tier_review_at) items.push({ kind: 'review', at: toDate(rows[0].tier_review_at) });
  const order = { activation: 0, expiry: 1, review: 2 };
  items.sort((a, b) => a.at.getTime() - b.at.getTime() || order[a.kind] - order[b.kind]);
  return items[0] ?? null;
}

/**
 * Runs everything due up to `now`, oldest first, each change at its own due time (a clock moved a
 * year ahead replays the year in order: availability, expiries and tier reviews as they fell).
 * Returns how many changes it made and when the next one is due; `max` bounds one call.
 */
export async function processDue(pool: Pool, scope: Scope, customerId: string, now: number, max = 200): Promise<{ processed: number; nextDueAt: number | null }> {
  let processed = 0;
  for (; processed < max; processed++) {
    const done = await inTransaction(pool, async (db) => {
      const program = await loadProgram(db, scope);
      const { rows } = await db.query('select 1 from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3 for update',
        [customerId, scope.accountId, scope.livemode]);
      if (!rows[0]) return true;
      const item = await earliestDue(db, scope, customerId, new Date(now));
      if (!item) return true;
      if (item.kind === 'review') await reviewTier(db, scope, customerId, program, item.at, false);
      else if (item.kind === 'activation') await activate(db, scope, item.grant, program, item.at);
      else await expire(db, scope, item.grant, item.at);
      return false;
    });
    if (done) break;
  }
  const db = await pool.connect();
  try {
    return { processed, nextDueAt: await nextDueAt(db, scope, customerId) };
  } finally {
    db.release();
  }
}

/** The return window closed: the grant's remaining points move from pending to available (paying back a shortfall first). */
async function activate(db: Db, scope: Scope, grant: GrantRow, program: Program, at: Date): Promise<void> {
  const remaining = Number(grant.remaining_points);
  const { rows } = await db.query<{ shortfall_points: string }>('select shortfall_points from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3',
    [grant.customer_id, scope.accountId, scope.livemode]);
  const repay = Math.min(Number(rows[0]!.shortfall_points), remaining);
  await db.query(`update loyalty_grants set status = $2, remaining_points = $3 where id = $1`,
    [grant.id, remaining - repay === 0 ? 'spent' : 'available', remaining - repay]);
  await applyChange(db, scope, grant.customer_id, {
    type: 'activation', points: remaining - repay, pending: -remaining, shortfall: -repay, lifetime: remaining, grantId: grant.id,
    orderId: grant.order_id, reason: 'return_window_closed', at, allocations: repay ? [{ grant_id: grant.id, points: repay }] : [],
  });
  await liftTier(db, scope, grant.customer_id, program, at, null);
}

async function expire(db: Db, scope: Scope, grant: GrantRow, at: Date): Promise<void> {
  const remaining = Number(grant.remaining_points);
  const wasPending = grant.status === 'pending';
  await db.query(`update loyalty_grants set status = 'expired', remaining_points = 0 where id = $1`, [grant.id]);
  const entry = await applyChange(db, scope, grant.customer_id, {
    type: 'expiry', points: wasPending ? 0 : -remaining, pending: wasPending ? -remaining : 0, grantId: grant.id, orderId: grant.order_id,
    reason: 'expired', at, allocations: [{ grant_id: grant.id, points: remaining }],
  });
  await recordOutboxEvent(db, scope, 'rewards.points.expired', entry, grant.customer_id);
}

// ---- Reversals ------------------------------------------------------------------------------

export interface ReversalInput {
  accountId: string;
  livemode: boolean;
  customerId: string;
  /** The grants of this order (cancellation) or of this payment (refund). */
  orderId: string | null;
  paymentId: string | null;
  /** Cancellation: everything; refund: the share refunded so far (amount_refunded / amount). */
  share: { part: number; whole: number } | 'all';
  reason: string;
  at: number;
  requestId: string | null;
}

/**
 * Reverses what an order earned: up to the share refunded (cumulative, so a repeated event
 * reverses nothing more). From the order's own grant first (pending or available), then from the
 * customer's other available points; what was already spent is recorded as a shortfall, which
 * blocks redemptions and is paid back from the next points that become available.
 */
export async function reverseOrderPoints(pool: Pool, input: ReversalInput): Promise<{ entries: LedgerEntryView[]; nextDueAt: number | null }> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return inTransaction(pool, async (db) => {
    const program = await loadProgram(db, scope);
    const at = new Date(input.at);
    await lockAccount(db, scope, input.customerId, program, at);
    const { rows: grants } = await db.query<GrantRow>(
      `select * from loyalty_grants where account_id = $1 and livemode = $2 and customer_id = $3 and source in ('award', 'order')
          and (($4::text is not null and order_id = $4) or ($5::text is not null and payment_id = $5)) order by id`,
      [scope.accountId, scope.livemode, input.customerId, input.orderId, input.paymentId]);
    const entries: LedgerEntryView[] = [];
    for (const grant of grants) {
      const points = Number(grant.points);
      const target = input.share === 'all' ? points : proportionalPoints(points, input.share.part, input.share.whole);
      const delta = target - Number(grant.reversed_points);
      if (delta <= 0) continue;
      const own = Math.min(delta, Number(grant.remaining_points));
      const pending = grant.status === 'pending';
      const { rows: acct } = await db.query<{ points_balance: string }>('select points_balance from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3',
        [input.customerId, scope.accountId, scope.livemode]);
      const balanceAfterOwn = Number(acct[0]!.points_balance) - (pending ? 0 : own);
      const newRemaining = Number(grant.remaining_points) - own;
      const reversed = Number(grant.reversed_points) + delta;
      await db.query('update loyalty_grants set remaining_points = $2, reversed_points = $3, status = $4 where id = $1',
        [grant.id, newRemaining, reversed, reversed === points ? 'reversed' : newRemaining === 0 && !pending ? 'spent' : grant.status]);
      const fromOthers = await spendGrants(db, scope, input.customerId, Math.min(delta - own, balanceAfterOwn));
      const takenOthers = fromOthers.reduce((s, a) => s + a.points, 0);
      const shortfall = delta - own - takenOthers;
      const entry = await applyChange(db, scope, input.customerId, {
        type: 'reversal', points: -(pending ? 0 : own) - takenOthers, pending: pending ? -own : 0, shortfall,
        // Points that had become available were counted as earned: they are no longer.
        lifetime: pending ? -(delta - own) : -delta,
        grantId: grant.id, orderId: grant.order_id, reason: input.reason, at,
        allocations: [...(own ? [{ grant_id: grant.id, points: own }] : []), ...fromOthers],
      });
      await recordOutboxEvent(db, scope, 'rewards.points.reversed', entry, input.customerId, input.requestId);
      entries.push(entry);
    }
    return { entries, nextDueAt: await nextDueAt(db, scope, input.customerId) };
  });
}

// ---- Adjustments and reviews by operators -------------------------------------------------------

export interface AdjustmentInput {
  accountId: string;
  livemode: boolean;
  customerId: string;
  adjustmentId: string;
  points: number;
  reason: string;
  operator: string;
  at: number;
}

/**
 * An operator's correction: positive points are a new available grant (default expiry); negative
 * points are taken from the available balance, earliest expiry first, never below zero. Recorded
 * in the ledger with the operator and reason, and in the admin actions.
 */
export async function adjustPoints(pool: Pool, input: AdjustmentInput): Promise<{ entry: LedgerEntryView; nextDueAt: number | null }> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  if (input.points > 0) {
    const result = await recordAward(pool, {
      ...scope, grantId: input.adjustmentId, customerId: input.customerId, source: 'adjustment', points: input.points, multiplier: 1,
      reason: input.reason, orderId: null, paymentId: null, orderAmount: null, currency: null, expiresAt: null, metadata: {},
      requestIdempotencyKey: null, requestId: null, operator: input.operator, at: input.at,
    });
    const { rows } = await pool.query<EntryRow>(
      `select * from loyalty_ledger_entries where account_id = $1 and livemode = $2 and grant_id = $3 and type = 'adjustment' order by id limit 1`,
      [scope.accountId, scope.livemode, result.grant.id]);
    return { entry: entryView(rows[0]!, scope), nextDueAt: result.nextDueAt };
  }
  const entryId = withPrefix('entry', input.adjustmentId);
  return inTransaction(pool, async (db) => {
    const program = await loadProgram(db, scope);
    const at = new Date(input.at);
    const account = await lockAccount(db, scope, input.customerId, program, at);
    // A retried step whose first attempt committed finds its entry instead of taking the points twice.
    const { rows: done } = await db.query<EntryRow>('select * from loyalty_ledger_entries where id = $1', [entryId]);
    if (done[0]) return { entry: entryView(done[0], scope), nextDueAt: await nextDueAt(db, scope, input.customerId) };
    const want = -input.points;
    if (Number(account.points_balance) < want) throw insufficientPoints(Number(account.points_balance), want, Number(account.shortfall_points));
    const taken = await spendGrants(db, scope, input.customerId, want);
    const entry = await applyChange(db, scope, input.customerId, {
      entryId, type: 'adjustment', points: -want, lifetime: -want, reason: input.reason, operator: input.operator, at, allocations: taken,
    });
    return { entry, nextDueAt: await nextDueAt(db, scope, input.customerId) };
  });
}

/** An operator re-runs the tier evaluation now (the anniversary rule: up as earned, down at most `max_tiers_down`). */
export async function reevaluateTier(pool: Pool, scope: Scope, customerId: string, at: number): Promise<{ change: TierChangeView | null; nextDueAt: number | null }> {
  return inTransaction(pool, async (db) => {
    const program = await loadProgram(db, scope);
    await lockAccount(db, scope, customerId, program, new Date(at));
    const change = await reviewTier(db, scope, customerId, program, new Date(at), true);
    return { change, nextDueAt: await nextDueAt(db, scope, customerId) };
  });
}

// ---- Redemption -----------------------------------------------------------------------------

export function insufficientPoints(balance: number, required: number, shortfall: number): ApiError {
  return conflict('insufficient_points',
    shortfall > 0
      ? `Redemptions are blocked until the customer earns back ${shortfall} reversed points that were already spent (points_balance ${balance}).`
      : `The customer has ${balance} points available; ${required} are needed.`,
    shortfall > 0 ? 'Wait until the customer has earned the shortfall back, then redeem.' : 'Redeem a cheaper reward, or award more points first.',
    { points_balance: balance, points_required: required, shortfall_points: shortfall },
  );
}

interface RedemptionRow {
  id: string;
  customer_id: string;
  reward_id: string;
  points_used: string;
  code: string;
  balance_after: string;
  metadata: Record<string, string>;
  created_at: Date;
}

export function redemptionView(r: RedemptionRow, scope: Scope): RedemptionView {
  return {
    id: r.id, object: 'loyalty_redemption', livemode: scope.livemode, customer_id: r.customer_id, reward_id: r.reward_id,
    points_used: Number(r.points_used), code: r.code, balance_after: Number(r.balance_after), metadata: r.metadata, created_at: toDate(r.created_at).toISOString(),
  };
}

const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `RDM-XXXX-XXXX-XXXX`: 60 random bits in an alphabet without look-alikes. */
function redemptionCode(): string {
  const bytes = randomBytes(12);
  const chars = [...bytes].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join('');
  return `RDM-${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8, 12)}`;
}

export interface RedeemInput {
  redemptionId: string;
  customerId: string;
  rewardId: string;
  cost: number;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
  /** The program's now (its test clock in the sandbox): the reward must not have expired. */
  at: Date;
}

/**
 * Redeems a reward in one transaction: the reward's stock (a conditional UPDATE, never below
 * zero), then the customer's balance (a conditional UPDATE: `points_balance >= cost` and no
 * shortfall, re-checked by PostgreSQL after any concurrent redemption's commit, so fifty
 * concurrent redemptions against a balance for ten succeed exactly ten times), then the grants,
 * earliest expiry first. The same request (id or Idempotency-Key) answers the same redemption.
 */
export async function redeem(pool: Pool, scope: Scope, input: RedeemInput): Promise<RedemptionView> {
  const prior = async (db: Pick<Pool | PoolClient, 'query'>) => {
    const { rows } = await db.query<RedemptionRow>(
      `select * from loyalty_redemptions where account_id = $1 and livemode = $2 and (id = $3 or request_idempotency_key = $4) limit 1`,
      [scope.accountId, scope.livemode, input.redemptionId, input.requestIdempotencyKey]);
    return rows[0] ? redemptionView(rows[0], scope) : null;
  };
  if (input.requestIdempotencyKey) {
    const found = await prior(pool);
    if (found) return found;
  }
  try {
    return await inTransaction(pool, async (db) => {
      const day = input.at.toISOString().slice(0, 10);
      // 1. The reward's stock, then the customer's balance: each a conditional UPDATE that PostgreSQL
      //    re-checks on the row's latest version after waiting for its lock.
      const { rows: [held] } = await db.query<{ reward_ok: boolean; points_balance: string | null; pending_points: string | null; shortfall_points: string | null }>(
        `with r as (
           update loyalty_rewards set stock_remaining = stock_remaining - 1, redeemed_count = redeemed_count + 1, updated_at = now()
            where id = $1 and account_id = $2 and livemode = $3 and status = 'active' and (expires is null or expires >= $4::date)
              and (stock_remaining is null or stock_remaining > 0)
           returning id
         ), a as (
           update loyalty_accounts set points_balance = points_balance - $6, updated_at = now()
            where id = $5 and account_id = $2 and livemode = $3 and points_balance >= $6 and shortfall_points = 0 and exists (select 1 from r)
           returning points_balance, pending_points, shortfall_points
         )
         select exists (select 1 from r) as reward_ok, a.points_balance, a.pending_points, a.shortfall_points from (select 1) one left join a on true`,
        [input.rewardId, scope.accountId, scope.livemode, day, input.customerId, input.cost]);
      if (!held!.reward_ok) throw await rewardUnavailable(db, scope, input.rewardId, day);
      if (held!.points_balance === null) {
        const { rows: acct } = await db.query<{ points_balance: string; shortfall_points: string }>(
          'select points_balance, shortfall_points from loyalty_accounts where id = $1 and account_id = $2 and livemode = $3',
          [input.customerId, scope.accountId, scope.livemode]);
        throw insufficientPoints(Number(acct[0]?.points_balance ?? 0), input.cost, Number(acct[0]?.shortfall_points ?? 0));
      }
      // 2. With the account locked, a new statement (a fresh snapshot): spend the grants, earliest
      //    expiry first, and write the redemption, its ledger entry and its event.
      const view: RedemptionView = {
        id: input.redemptionId, object: 'loyalty_redemption', livemode: scope.livemode, customer_id: input.customerId, reward_id: input.rewardId,
        points_used: input.cost, code: redemptionCode(), balance_after: Number(held!.points_balance), metadata: input.metadata,
        created_at: input.at.toISOString(),
      };
      const { rows: [done] } = await db.query<{ spent: string }>(
        `with ordered as (
           select id, remaining_points, sum(remaining_points) over (order by expires_at asc nulls last, awarded_at, id) as running
             from loyalty_grants
            where account_id = $1 and livemode = $2 and customer_id = $3 and status = 'available' and remaining_points > 0
         ), take as (
           select id, least(remaining_points, $4::bigint - (running - remaining_points)) as taken from ordered where running - remaining_points < $4::bigint
         ), spent as (
           update loyalty_grants g set remaining_points = g.remaining_points - t.taken,
                  status = case when g.remaining_points - t.taken = 0 then 'spent' else g.status end
             from take t where g.id = t.id
           returning g.id, t.taken
         ), redemption as (
           insert into loyalty_redemptions (id, account_id, livemode, customer_id, reward_id, points_used, code, balance_after, request_idempotency_key, metadata, created_at)
           values ($5, $1, $2, $3, $6, $4, $7, $8, $9, $10, $11)
           returning id
         ), entry as (
           insert into loyalty_ledger_entries (id, account_id, livemode, customer_id, type, points_change, pending_change, shortfall_change,
             balance_after, pending_after, shortfall_after, redemption_id, reason, allocations, effective_at)
           select $12, $1, $2, $3, 'redemption', -$4::bigint, 0, 0, $8, $13, $14, r.id, $15,
                  coalesce((select jsonb_agg(jsonb_build_object('grant_id', id, 'points', taken) order by id) from spent), '[]'::jsonb), $11
             from redemption r
           returning id
         ), event as (
           insert into events (id, account_id, livemode, type, data, customer_id, request_id, dispatched_at, synthetic, created_at)
           select $16, $1, $2, 'rewards.redeemed', $17, $3, $18, null, false, now() from entry
           returning id
         )
         select coalesce((select sum(taken) from spent), 0) as spent, (select count(*) from event) as events`,
        [scope.accountId, scope.livemode, input.customerId, input.cost, input.redemptionId, input.rewardId, view.code, view.balance_after,
          input.requestIdempotencyKey, JSON.stringify(input.metadata), input.at, rewardsId('entry'), held!.pending_points, held!.shortfall_points,
          `reward ${input.rewardId}`, newId('event'), JSON.stringify({ object: view }), input.requestId]);
      if (Number(done!.spent) !== input.cost) throw new Error(`ledger out of balance for ${input.customerId}: grants do not cover the balance`);
      return view;
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      const found = await prior(pool);
      if (found) return found;
    }
    throw err;
  }
}

async function rewardUnavailable(db: Db, scope: Scope, rewardId: string, day: string): Promise<ApiError> {
  const { rows } = await db.query<{ status: string; expires: string | null; stock_remaining: number | null }>(
    `select status, to_char(expires, 'YYYY-MM-DD') as expires, stock_remaining from loyalty_rewards where id = $1 and account_id = $2 and livemode = $3`,
    [rewardId, scope.accountId, scope.livemode]);
  const r = rows[0];
  if (!r) return notFound('reward', rewardId);
  if (r.status === 'archived') return conflict('reward_unavailable', `Reward ${rewardId} is archived.`, 'Redeem an active reward (GET /v3/rewards/catalog).', { current_state: 'archived' });
  if (r.expires !== null && r.expires < day) {
    return conflict('reward_unavailable', `Reward ${rewardId} expired on ${r.expires}.`, 'Redeem a reward that has not expired.', { current_state: 'expired' });
  }
  return conflict('reward_unavailable', `Reward ${rewardId} is out of stock.`, 'Redeem another reward.', { current_state: 'out_of_stock', stock_remaining: 0 });
}
