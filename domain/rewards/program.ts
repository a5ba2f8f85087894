import type { Pool, PoolClient } from 'pg';
import { ApiError } from '../../platform/errors.ts';
import type { Scope } from '../scope.ts';
import { rewardsId } from './ids.ts';
import {
  DEFAULT_EARN_RULES, DEFAULT_EXPIRY_MONTHS, DEFAULT_RETURN_WINDOW_DAYS, DEFAULT_TIERS, sortedTiers, toDate, type EarnRule, type TierRule,
} from './points.ts';
import type { ProgramView } from './schemas.ts';

/**
 * The loyalty program of an account and mode: earn rules, return window, default expiry, tiers
 * and the downgrade policy. Created with the defaults the first time anything reads it. In the
 * sandbox it may run on a test clock: then "now" for the whole area is the clock's time.
 */
export interface Program {
  id: string;
  earnRules: EarnRule[];
  returnWindowDays: number;
  expiryMonths: number | null;
  tiers: TierRule[];
  downgradePolicy: 'anniversary' | 'never';
  maxTiersDown: number;
  testClockTime: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface ProgramRow {
  id: string;
  earn_rules: EarnRule[];
  return_window_days: number;
  expiry_months: number | null;
  tiers: TierRule[];
  downgrade_policy: 'anniversary' | 'never';
  max_tiers_down: number;
  test_clock_time: Date | null;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (r: ProgramRow): Program => ({
  id: r.id, earnRules: r.earn_rules, returnWindowDays: r.return_window_days, expiryMonths: r.expiry_months, tiers: sortedTiers(r.tiers),
  downgradePolicy: r.downgrade_policy, maxTiersDown: r.max_tiers_down, testClockTime: r.test_clock_time ? toDate(r.test_clock_time) : null,
  createdAt: toDate(r.created_at), updatedAt: toDate(r.updated_at),
});

/** The program of `scope` (written with the defaults when there is none yet). `forUpdate` locks it. */
export async function loadProgram(db: Queryable, scope: Scope, forUpdate = false): Promise<Program> {
  const select = `select * from loyalty_programs where account_id = $1 and livemode = $2${forUpdate ? ' for update' : ''}`;
  let { rows } = await db.query<ProgramRow>(select, [scope.accountId, scope.livemode]);
  if (!rows[0]) {
    await db.query(
      `insert into loyalty_programs (id, account_id, livemode, earn_rules, return_window_days, expiry_months, tiers, downgrade_policy, max_tiers_down, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, 'anniversary', 1, now(), now()) on conflict (account_id, livemode) do nothing`,
      [rewardsId('program'), scope.accountId, scope.livemode, JSON.stringify(DEFAULT_EARN_RULES), DEFAULT_RETURN_WINDOW_DAYS, DEFAULT_EXPIRY_MONTHS, JSON.stringify(DEFAULT_TIERS)],
    );
    ({ rows } = await db.query<ProgramRow>(select, [scope.accountId, scope.livemode]));
  }
  return fromRow(rows[0]!);
}

/** The area's "now": the program's test clock in the sandbox when it has one, else the real time. */
export function programNow(program: Program): Date {
  return program.testClockTime ?? new Date();
}

export function programView(p: Program, scope: Scope): ProgramView {
  return {
    id: p.id, object: 'loyalty_program', livemode: scope.livemode,
    earn_rules: p.earnRules, return_window_days: p.returnWindowDays, points_expiry_months: p.expiryMonths, tiers: p.tiers,
    downgrade_policy: { type: p.downgradePolicy, max_tiers_down: p.maxTiersDown },
    test_clock: p.testClockTime ? { frozen_time: p.testClockTime.toISOString() } : null,
    created_at: p.createdAt.toISOString(), updated_at: p.updatedAt.toISOString(),
  };
}

export interface ProgramInput {
  earn_rules: EarnRule[];
  return_window_days: number;
  points_expiry_months: number | null;
  tiers: TierRule[];
  downgrade_policy: { type: 'anniversary' | 'never'; max_tiers_down: number };
}

/** PUT: replaces the program's rules (omitted fields take their defaults). Existing grants keep their dates. */
export async function putProgram(pool: Pool, scope: Scope, input: ProgramInput): Promise<ProgramView> {
  await loadProgram(pool, scope);
  const { rows } = await pool.query<ProgramRow>(
    `update loyalty_programs set earn_rules = $3, return_window_days = $4, expiry_months = $5, tiers = $6, downgrade_policy = $7,
            max_tiers_down = $8, updated_at = now()
      where account_id = $1 and livemode = $2 returning *`,
    [scope.accountId, scope.livemode, JSON.stringify(input.earn_rules), input.return_window_days, input.points_expiry_months,
      JSON.stringify(sortedTiers(input.tiers)), input.downgrade_policy.type, input.downgrade_policy.max_tiers_down],
  );
  return programView(fromRow(rows[0]!), scope);
}

export function requireSandbox(scope: Scope): void {
  if (scope.livemode) {
    throw new ApiError({
      status: 403, code: 'test_mode_only', title: 'Forbidden', detail: 'Loyalty test clocks exist only in test mode.',
      suggestion: 'Use a test key (bp_test_… or bp_rk_test_…).',
    });
  }
}

/**
 * Moves the program's test clock to `to` (never backwards); starts it when there is none.
 * Returns the clock's time before the move (null: there was none).
 */
export async function setProgramClock(pool: Pool, scope: Scope, to: Date): Promise<{ before: Date | null }> {
  requireSandbox(scope);
  const program = await loadProgram(pool, scope);
  const before = program.testClockTime;
  if (before && to.getTime() < before.getTime()) {
    throw new ApiError({
      status: 422, code: 'validation_failed', title: 'Validation Failed',
      detail: `The test clock is at ${before.toISOString()}; it only moves forward.`,
      suggestion: `Send a frozen_time at or after ${before.toISOString()}.`,
      errors: [{ path: 'frozen_time', message: `must not be before the clock's current time ${before.toISOString()}` }],
    });
  }
  await pool.query('update loyalty_programs set test_clock_time = $3, updated_at = now() where account_id = $1 and livemode = $2',
    [scope.accountId, scope.livemode, to]);
  return { before };
}
