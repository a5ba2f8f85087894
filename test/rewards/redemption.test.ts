import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { eventually } from '../commerce/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { award, balance, expectLedgerExplainsBalance, freshAccount, ledger, newReward, redeem, setClock } from './support.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http } = t));

const TOKEN = 'test-admin-token-0123456789';

describe('redemption', () => {
  it('fifty concurrent redemptions against a balance for ten: exactly ten succeed, the rest 409 insufficient_points with the balance', async () => {
    const { key, customer } = await freshAccount(platform, http);
    // Several grants, so the race also splits redemptions across lots.
    await award(http, key, { customer_id: customer, points: 300 });
    await award(http, key, { customer_id: customer, points: 450 });
    await award(http, key, { customer_id: customer, points: 250 });
    const reward = await newReward(http, key, { cost: 100, name: 'Tote bag' });
    const results = await Promise.all(Array.from({ length: 50 }, () => redeem(http, key, customer, reward)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(40);
    for (const refused of results.filter((r) => r.status === 409)) {
      expect(refused.body).toMatchObject({ code: 'insufficient_points', points_balance: 0, points_required: 100 });
    }
    const codes = results.filter((r) => r.status === 201).map((r) => r.body.code);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^RDM-[2-9A-Z]{4}-[2-9A-Z]{4}-[2-9A-Z]{4}$/);
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 0, available_rewards: [] });
    const redemptions = await ledger(http, key, customer, '&type=redemption');
    expect(redemptions).toHaveLength(10);
    expect(redemptions.map((e) => e.balance_after).sort((a, b) => b - a)).toEqual([900, 800, 700, 600, 500, 400, 300, 200, 100, 0]);
    expect((await http(`/v3/rewards/catalog/${reward.id}`, { key })).body.redeemed_count).toBe(10);
    await expectLedgerExplainsBalance(platform, customer);
  });

  it('never oversells a reward\'s stock, answers a retried request once, and refuses archived or expired rewards', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-05-01T00:00:00Z');
    await award(http, key, { customer_id: customer, points: 10_000 });
    const limited = await newReward(http, key, { cost: 50, stock: 3, name: 'Signed poster' });
    expect(limited).toMatchObject({ object: 'reward', stock: 3, stock_remaining: 3, status: 'active', expires: null });
    const results = await Promise.all(Array.from({ length: 10 }, () => redeem(http, key, customer, limited)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of results.filter((x) => x.status !== 201)) expect(r.body).toMatchObject({ status: 409, code: 'reward_unavailable', current_state: 'out_of_stock' });
    expect((await http(`/v3/loyalty/catalog/${limited.id}`, { key })).body).toMatchObject({ stock_remaining: 0, redeemed_count: 3 });
    expect((await balance(http, key, customer)).points_balance).toBe(10_000 - 150);

    const reward = await newReward(http, key, { cost: 200, name: 'Mug', expires: '2025-05-31' });
    const first = await redeem(http, key, customer, reward, { 'Idempotency-Key': 'redeem-once' });
    const again = await redeem(http, key, customer, reward, { 'Idempotency-Key': 'redeem-once' });
    expect(first.status, first.text).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(first.body).toMatchObject({ object: 'loyalty_redemption', customer_id: customer, reward_id: reward.id, points_used: 200, balance_after: 10_000 - 350 });
    expect(first.body.id).toMatch(/^lrd_/);

    // The balance lists what it affords now: the mug until it expires, never the sold-out poster.
    const cheap = await newReward(http, key, { cost: 20_000, name: 'Too dear' });
    expect((await balance(http, key, customer)).available_rewards).toEqual([{ id: reward.id, name: 'Mug', cost: 200, expires: '2025-05-31' }]);
    await setClock(http, key, '2025-06-01T00:00:00Z');
    expect((await balance(http, key, customer)).available_rewards).toEqual([]);
    const expired = await redeem(http, key, customer, reward);
    expect(expired.status).toBe(409);
    expect(expired.body).toMatchObject({ code: 'reward_unavailable', current_state: 'expired' });

    const archived = await http(`/v3/rewards/catalog/${cheap.id}/archive`, { key, body: {} });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body.status).toBe('archived');
    const refused = await redeem(http, key, customer, cheap);
    expect(refused.body).toMatchObject({ status: 409, code: 'reward_unavailable', current_state: 'archived' });
    const listed = await http('/v3/rewards/catalog?status=active&limit=2', { key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual([reward.id, limited.id]);
    expect(listed.body.has_more).toBe(false);
    await expectLedgerExplainsBalance(platform, customer);
  });
});

describe('admin API', () => {
  it('finds a customer\'s loyalty workflow, reads its live state, and steers it with the operator and reason recorded', async () => {
    const { key, customer, accountId } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    await award(http, key, { customer_id: customer, points: 1200 });
    const admin = createCallerFactory(adminRouter)(createContextInner({
      orm: platform.orm, temporal: platform.temporal, permissionScopes, adminToken: TOKEN, presentedToken: TOKEN,
    }));
    const ref = { accountId, livemode: false, customerId: customer };

    // Visibility is eventually consistent: the search finds the workflow soon after it started.
    const found = await eventually(async () => {
      const list = await admin.rewards.find({ customerId: customer });
      return list.length > 0 && list;
    }, 20_000, 'the workflow in visibility');
    expect(found.map((w) => w.workflow_id)).toEqual([`loyalty-${customer}`]);
    expect(found[0]).toMatchObject({ type: 'loyaltyWorkflow', status: 'RUNNING' });
    const described = await admin.rewards.describe(ref);
    expect(described.workflow).toMatchObject({ workflow_id: `loyalty-${customer}`, status: 'RUNNING' });
    expect(described.state).toMatchObject({ clock_now: '2025-01-01T00:00:00.000Z', next_due_at: '2026-01-01T00:00:00.000Z' });
    expect(described.balance).toMatchObject({ points_balance: 1200, tier: { current: 'silver' } });

    const added = await admin.rewards.adjustPoints({ ...ref, points: 300, operator: 'ops@example.com', reason: 'goodwill for a late delivery' });
    expect(added.entry).toMatchObject({ type: 'adjustment', points_change: 300, balance_after: 1500, reason: 'goodwill for a late delivery' });
    const taken = await admin.rewards.adjustPoints({ ...ref, points: -500, operator: 'ops@example.com', reason: 'duplicate award' });
    expect(taken.entry).toMatchObject({ type: 'adjustment', points_change: -500, balance_after: 1000 });
    await expect(admin.rewards.adjustPoints({ ...ref, points: -5000, operator: 'ops@example.com', reason: 'too much' }))
      .rejects.toMatchObject({ code: 'CONFLICT' });
    // Re-evaluation: 1200 earned this year is still silver (adjustments do not count toward tiers).
    const review = await admin.rewards.reevaluateTier({ ...ref, operator: 'lead@example.com', reason: 'customer asked' });
    expect(review.change).toBeNull();
    const actions = await admin.rewards.actions(ref);
    expect(actions.map((a) => [a.action, a.operator, a.reason])).toEqual([
      ['reevaluate_tier', 'lead@example.com', 'customer asked'],
      ['adjust_points', 'ops@example.com', 'duplicate award'],
      ['adjust_points', 'ops@example.com', 'goodwill for a late delivery'],
    ]);
    const [row] = await platform.sql<{ operator: string }>(`select operator from loyalty_ledger_entries where customer_id = $1 and type = 'adjustment' order by id limit 1`, [customer]);
    expect(row!.operator).toBe('ops@example.com');
    await expect(admin.rewards.adjustPoints({ ...ref, customerId: 'cus_unknown', points: 1, operator: 'x', reason: 'y' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expectLedgerExplainsBalance(platform, customer);
  });
});
