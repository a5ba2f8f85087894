import type { Pool } from 'pg';
import { notFound } from '../../platform/errors.ts';
import type { Scope } from '../scope.ts';
import { toDate } from './points.ts';
import type { RewardView } from './schemas.ts';

/** The rewards catalog: what points buy. Stock only ever falls through a redemption's conditional UPDATE. */
interface RewardRow {
  id: string;
  name: string;
  description: string | null;
  cost: string;
  expires: string | null;
  stock: number | null;
  stock_remaining: number | null;
  redeemed_count: number;
  status: 'active' | 'archived';
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, name, description, cost, to_char(expires, 'YYYY-MM-DD') as expires, stock, stock_remaining, redeemed_count, status, metadata, created_at, updated_at`;

export function rewardView(r: RewardRow, scope: Scope): RewardView {
  return {
    id: r.id, object: 'reward', livemode: scope.livemode, name: r.name, description: r.description, cost: Number(r.cost), expires: r.expires,
    stock: r.stock, stock_remaining: r.stock_remaining, redeemed_count: r.redeemed_count, status: r.status, metadata: r.metadata,
    created_at: toDate(r.created_at).toISOString(), updated_at: toDate(r.updated_at).toISOString(),
  };
}

export interface RewardInput {
  name: string;
  description?: string | undefined;
  cost: number;
  expires?: string | undefined;
  stock?: number | undefined;
  metadata?: Record<string, string> | undefined;
}

/** Creates a reward; a retry with the same id (the request's Idempotency-Key) answers the first. */
export async function createReward(pool: Pool, scope: Scope, id: string, input: RewardInput): Promise<RewardView> {
  await pool.query(
    `insert into loyalty_rewards (id, account_id, livemode, name, description, cost, expires, stock, stock_remaining, status, metadata, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $8, 'active', $9, now(), now()) on conflict (id) do nothing`,
    [id, scope.accountId, scope.livemode, input.name, input.description ?? null, input.cost, input.expires ?? null, input.stock ?? null, JSON.stringify(input.metadata ?? {})],
  );
  return getReward(pool, scope, id);
}

export async function findReward(pool: Pool, scope: Scope, id: string): Promise<RewardView | null> {
  const { rows } = await pool.query<RewardRow>(`select ${COLUMNS} from loyalty_rewards where id = $1 and account_id = $2 and livemode = $3`, [id, scope.accountId, scope.livemode]);
  return rows[0] ? rewardView(rows[0], scope) : null;
}

export async function getReward(pool: Pool, scope: Scope, id: string): Promise<RewardView> {
  const found = await findReward(pool, scope, id);
  if (!found) throw notFound('reward', id);
  return found;
}

export async function listRewards(
  pool: Pool, scope: Scope, filters: { status?: ('active' | 'archived')[] | undefined },
  page: { after: string | undefined; direction: 'asc' | 'desc'; limit: number },
): Promise<RewardView[]> {
  const values: unknown[] = [scope.accountId, scope.livemode];
  let where = 'account_id = $1 and livemode = $2';
  if (page.after) {
    values.push(page.after);
    where += ` and id ${page.direction === 'desc' ? '<' : '>'} $${values.length}`;
  }
  if (filters.status) {
    values.push(filters.status);
    where += ` and status = any($${values.length}::text[])`;
  }
  values.push(page.limit + 1);
  const { rows } = await pool.query<RewardRow>(`select ${COLUMNS} from loyalty_rewards where ${where} order by id ${page.direction} limit $${values.length}`, values);
  return rows.map((r) => rewardView(r, scope));
}

/** Archives a reward: it can no longer be redeemed (redemptions made stay valid). Archiving twice is a no-op. */
export async function archiveReward(pool: Pool, scope: Scope, id: string): Promise<RewardView> {
  await getReward(pool, scope, id);
  await pool.query(`update loyalty_rewards set status = 'archived', updated_at = now() where id = $1 and account_id = $2 and livemode = $3 and status = 'active'`,
    [id, scope.accountId, scope.livemode]);
  return getReward(pool, scope, id);
}

/** Active, unexpired rewards in stock that cost at most `points`, cheapest first (at most 100). */
export async function affordableRewards(pool: Pool, scope: Scope, points: number, day: string): Promise<{ id: string; name: string; cost: number; expires: string | null }[]> {
  const { rows } = await pool.query<{ id: string; name: string; cost: string; expires: string | null }>(
    `select id, name, cost, to_char(expires, 'YYYY-MM-DD') as expires from loyalty_rewards
      where account_id = $1 and livemode = $2 and status = 'active' and cost <= $3 and (expires is null or expires >= $4::date)
        and (stock_remaining is null or stock_remaining > 0)
      order by cost, id limit 100`,
    [scope.accountId, scope.livemode, points, day]);
  return rows.map((r) => ({ id: r.id, name: r.name, cost: Number(r.cost), expires: r.expires }));
}
