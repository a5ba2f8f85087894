import { expect } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';

/** A key of a new account of its own (so each test has its own loyalty program and clock) and a customer. */
export async function freshAccount(platform: TestPlatform, http: Http): Promise<{ key: string; accountId: string; customer: string }> {
  const accountId = await platform.newAccount();
  const key = await platform.newKey({ accountId });
  return { key, accountId, customer: await newCustomer(http, key) };
}

export async function newCustomer(http: Http, key: string): Promise<string> {
  const res = await http('/v3/customers', { key, body: { email: `l${Math.random().toString(36).slice(2)}@example.com`, name: 'Loyal Customer' } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

export async function setClock(http: Http, key: string, at: string): Promise<void> {
  const res = await http('/v3/loyalty/test_clock', { key, body: { frozen_time: at } });
  expect(res.status, res.text).toBe(200);
  expect(res.body.frozen_time).toBe(new Date(at).toISOString());
}

export async function award(http: Http, key: string, body: Record<string, unknown>, expected = 201): Promise<any> {
  const res = await http('/v3/rewards/points/award', { key, body: { reason: 'test', ...body } });
  expect(res.status, res.text).toBe(expected);
  return res.body;
}

export async function balance(http: Http, key: string, customer: string): Promise<any> {
  const res = await http(`/v3/rewards/customers/${customer}/balance`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

export async function ledger(http: Http, key: string, customer: string, query = ''): Promise<any[]> {
  const res = await http(`/v3/rewards/customers/${customer}/ledger?limit=100&sort=created_at${query}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

export async function newReward(http: Http, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await http('/v3/rewards/catalog', { key, body: { name: 'Reward', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function redeem(http: Http, key: string, customer: string, reward: { id: string; cost: number }, headers: Record<string, string> = {}) {
  return http('/v3/rewards/redeem', { key, headers, body: { customer_id: customer, reward_id: reward.id, points_used: reward.cost } });
}

/** The sum of every ledger entry's change equals the balance columns (the ledger explains the balance). */
export async function expectLedgerExplainsBalance(platform: TestPlatform, customer: string): Promise<void> {
  const [row] = await platform.sql<{ points: string; pending: string; shortfall: string; balance: string; pend: string; short: string; grants: string }>(
    `select coalesce(sum(e.points_change), 0) as points, coalesce(sum(e.pending_change), 0) as pending, coalesce(sum(e.shortfall_change), 0) as shortfall,
            a.points_balance as balance, a.pending_points as pend, a.shortfall_points as short,
            (select coalesce(sum(remaining_points), 0) from loyalty_grants g where g.customer_id = a.id and g.status in ('available', 'pending')) as grants
       from loyalty_accounts a left join loyalty_ledger_entries e on e.customer_id = a.id where a.id = $1
      group by a.points_balance, a.pending_points, a.shortfall_points, a.id`, [customer]);
  expect(row, 'loyalty account').toBeDefined();
  expect(Number(row!.points)).toBe(Number(row!.balance));
  expect(Number(row!.pending)).toBe(Number(row!.pend));
  expect(Number(row!.shortfall)).toBe(Number(row!.short));
  expect(Number(row!.grants)).toBe(Number(row!.balance) + Number(row!.pend));
}
