import { describe, expect, it } from 'vitest';
import { create, eventually, orderBody, stockedProduct, openShop } from '../commerce/support.ts';
import { cardBody } from '../payments/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import {
  award, balance, expectLedgerExplainsBalance, freshAccount, ledger, newReward, redeem, setClock,
} from './support.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http } = t));

async function events(type: string, customer: string): Promise<any[]> {
  const rows = await platform.sql<{ data: { object: any } }>(`select data from events where type = $1 and customer_id = $2 order by id`, [type, customer]);
  return rows.map((r) => r.data.object);
}

describe('awards, multipliers and tiers', () => {
  it('credits floor(points × multiplier × tier multiplier), upgrades as soon as the year\'s points reach a tier', async () => {
    const { key, customer } = await freshAccount(platform, http);
    const first = await award(http, key, { customer_id: customer, points: 100, multiplier: 1.5, reason: 'welcome bonus', metadata: { campaign: 'spring' } });
    expect(first).toMatchObject({
      object: 'loyalty_grant', customer_id: customer, source: 'award', points: 100, multiplier: 1.5, tier: 'bronze', tier_multiplier: 1,
      credited_points: 150, remaining_points: 150, status: 'available', reason: 'welcome bonus', order_id: null,
      workflow_id: `loyalty-${customer}`, metadata: { campaign: 'spring' },
    });
    expect(first.id).toMatch(/^lgr_[0-9a-z]{26}$/);
    const keyed = { key, headers: { 'Idempotency-Key': 'award-1000' }, body: { customer_id: customer, points: 1000, reason: 'test' } };
    const once = await http('/v3/rewards/points/award', keyed);
    const twice = await http('/v3/rewards/points/award', keyed);
    expect(once.status, once.text).toBe(201);
    expect(twice.headers.get('idempotent-replayed')).toBe('true');
    expect(twice.body).toEqual(once.body);
    // 1150 in the year: silver (threshold 1000), multiplier 1.25 from now on.
    const silver = await award(http, key, { customer_id: customer, points: 100, multiplier: 2 });
    expect(silver).toMatchObject({ tier: 'silver', tier_multiplier: 1.25, credited_points: 250 });
    const odd = await award(http, key, { customer_id: customer, points: 7, multiplier: 1.2345 });
    expect(odd.credited_points).toBe(10); // 7 × 1.2345 × 1.25 = 10.80…
    const b = await balance(http, key, customer);
    expect(b).toMatchObject({
      object: 'loyalty_balance', customer_id: customer, points_balance: 1410, pending_points: 0, lifetime_points: 1410, shortfall_points: 0,
      points_earned_12m: 1410, tier: { current: 'silver', next_tier: 'gold', points_to_next: 5000 - 1410 },
    });
    const changes = await events('loyalty.tier.changed', customer);
    expect(changes).toEqual([expect.objectContaining({ previous_tier: 'bronze', tier: 'silver', direction: 'upgrade', points_earned_12m: 1150 })]);
    expect((await events('rewards.points.awarded', customer)).map((g) => g.credited_points)).toEqual([150, 1000, 250, 10]);
    // The same through /v3/loyalty: one implementation.
    const alias = await http(`/v3/loyalty/customers/${customer}/balance`, { key });
    expect(alias.body).toEqual(b);
    await expectLedgerExplainsBalance(platform, customer);
  });

  it('keeps an order\'s points pending through the return window (test clock), and awards an order and reason once', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    const grant = await award(http, key, { customer_id: customer, points: 200, order_id: 'ord_external_1', reason: 'purchase' });
    expect(grant).toMatchObject({ status: 'pending', available_at: '2025-01-15T00:00:00.000Z', expires_at: '2026-01-01T00:00:00.000Z', credited_points: 200 });
    const again = await award(http, key, { customer_id: customer, points: 999, order_id: 'ord_external_1', reason: 'purchase' }, 200);
    expect(again.id).toBe(grant.id);
    expect(again.credited_points).toBe(200);
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 0, pending_points: 200, lifetime_points: 0 });

    await setClock(http, key, '2025-01-14T23:59:59Z');
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 0, pending_points: 200 });
    await setClock(http, key, '2025-01-15T00:00:01Z');
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 200, pending_points: 0, lifetime_points: 200 });
    const entries = await ledger(http, key, customer);
    expect(entries.map((e) => [e.type, e.points_change, e.pending_change, e.created_at])).toEqual([
      ['grant', 0, 200, '2025-01-01T00:00:00.000Z'],
      ['activation', 200, -200, '2025-01-15T00:00:00.000Z'],
    ]);
    await expectLedgerExplainsBalance(platform, customer);
  });

  it('spends the earliest-expiring grant first and expires what remains of a grant at its expiry', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    const a = await award(http, key, { customer_id: customer, points: 100, expires_at: '2025-03-01T00:00:00Z' });
    const b = await award(http, key, { customer_id: customer, points: 100, expires_at: '2025-02-01T00:00:00Z' });
    const c = await award(http, key, { customer_id: customer, points: 100 });
    const reward = await newReward(http, key, { cost: 150 });
    const spent = await redeem(http, key, customer, reward);
    expect(spent.status, spent.text).toBe(201);
    const entries = await ledger(http, key, customer, '&type=redemption');
    expect(entries[0].allocations).toEqual(expect.arrayContaining([{ grant_id: b.id, points: 100 }, { grant_id: a.id, points: 50 }]));
    expect(entries[0].allocations).toHaveLength(2);
    expect((await balance(http, key, customer)).next_expiry).toEqual({ points: 50, expires_at: '2025-03-01T00:00:00.000Z' });

    await setClock(http, key, '2025-03-02T00:00:00Z');
    const after = await balance(http, key, customer);
    expect(after).toMatchObject({ points_balance: 100, next_expiry: { points: 100, expires_at: '2026-01-01T00:00:00.000Z' } });
    const expired = await events('rewards.points.expired', customer);
    expect(expired).toEqual([expect.objectContaining({ type: 'expiry', grant_id: a.id, points_change: -50, balance_after: 100, created_at: '2025-03-01T00:00:00.000Z' })]);
    await setClock(http, key, '2026-01-01T00:00:00Z');
    expect((await balance(http, key, customer)).points_balance).toBe(0);
    expect((await events('rewards.points.expired', customer)).map((e) => e.grant_id)).toEqual([a.id, c.id]);
    await expectLedgerExplainsBalance(platform, customer);
  });

  it('downgrades on the anniversary of reaching the tier, one tier at a time', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    await award(http, key, { customer_id: customer, points: 5000 });
    expect(await balance(http, key, customer)).toMatchObject({ tier: { current: 'gold', next_tier: 'platinum' }, tier_review_at: '2026-01-01T00:00:00.000Z' });
    await setClock(http, key, '2025-06-01T00:00:00Z');
    await award(http, key, { customer_id: customer, points: 100 }); // gold: ×1.5
    await setClock(http, key, '2025-12-31T00:00:00Z');
    expect((await balance(http, key, customer)).tier.current).toBe('gold');
    // The anniversary: 150 points in the last 12 months, far below gold: down one tier only.
    await setClock(http, key, '2026-01-02T00:00:00Z');
    expect(await balance(http, key, customer)).toMatchObject({ tier: { current: 'silver' }, tier_review_at: '2027-01-01T00:00:00.000Z' });
    await setClock(http, key, '2027-01-02T00:00:00Z');
    expect(await balance(http, key, customer)).toMatchObject({ tier: { current: 'bronze', next_tier: 'silver' }, tier_review_at: null });
    expect((await events('loyalty.tier.changed', customer)).map((c) => `${c.direction} ${c.previous_tier}→${c.tier} ${c.changed_at.slice(0, 10)}`)).toEqual([
      'upgrade bronze→gold 2025-01-01', 'downgrade gold→silver 2026-01-01', 'downgrade silver→bronze 2027-01-01',
    ]);
  });
});

describe('orders earn and refunds reverse (event consumers)', () => {
  it('earns on a paid order, reverses a cancellation from the pending points', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    const shop = { ...(await openShop(http, key)), customerId: customer };
    await stockedProduct(http, key, shop, 'LOY-MUG', 10, { price: 6450 });
    const order = await create(http, key, '/v3/orders', orderBody(shop, [{ sku: 'LOY-MUG', quantity: 2 }], { payment_status: 'paid' }));
    const pending = await eventually(async () => {
      const b = await balance(http, key, customer);
      return b.pending_points > 0 && b;
    }, 20_000, 'the order\'s points');
    expect(pending).toMatchObject({ pending_points: 129, points_balance: 0 }); // USD 129.00 × 1 point
    const cancel = await http(`/v3/orders/${order.id}/cancel`, { key, body: { reason: 'changed mind' } });
    expect(cancel.status, cancel.text).toBe(200);
    await eventually(async () => (await balance(http, key, customer)).pending_points === 0, 20_000, 'the reversal');
    const entries = await ledger(http, key, customer);
    expect(entries.map((e) => [e.type, e.points_change, e.pending_change, e.shortfall_change, e.order_id, e.reason])).toEqual([
      ['grant', 0, 129, 0, order.id, 'order_paid'], ['reversal', 0, -129, 0, order.id, 'order_canceled'],
    ]);
    await expectLedgerExplainsBalance(platform, customer);
  });

  it('reverses refunds by the share refunded: from the available points, and what was spent becomes a shortfall that blocks redemptions until earned back', async () => {
    const { key, customer } = await freshAccount(platform, http);
    await setClock(http, key, '2025-01-01T00:00:00Z');
    const shop = { ...(await openShop(http, key)), customerId: customer };
    await stockedProduct(http, key, shop, 'LOY-TEE', 10, { price: 12900 });
    const paid = await http('/v3/payments/process', { key, body: { amount: 12900, currency: 'usd', customer_id: customer, payment_method: cardBody('4242424242424242') } });
    expect(paid.status, paid.text).toBe(201);
    await create(http, key, '/v3/orders', orderBody(shop, [{ sku: 'LOY-TEE', quantity: 1 }], { payment_status: 'paid', payment_id: paid.body.id }));
    await eventually(async () => (await balance(http, key, customer)).pending_points === 129, 20_000, 'the order\'s points');
    await setClock(http, key, '2025-01-16T00:00:00Z');
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 129, pending_points: 0 });
    // A quarter refunded: floor(129 × 3225 / 12900) = 32 points reversed from the order's own grant, nothing spent yet.
    const partial = await http(`/v3/payments/${paid.body.id}/refunds`, { key, body: { amount: 3225 } });
    expect(partial.status, partial.text).toBe(201);
    await eventually(async () => (await balance(http, key, customer)).points_balance === 97, 20_000, 'the partial reversal');
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 97, shortfall_points: 0, lifetime_points: 97 });

    const reward = await newReward(http, key, { cost: 90, name: 'Free coffee' });
    expect((await redeem(http, key, customer, reward)).status).toBe(201);
    // The rest refunded: 97 more to reverse, 7 left on the grant, 90 already spent: a shortfall of 90.
    const refund = await http(`/v3/payments/${paid.body.id}/refunds`, { key, body: {} });
    expect(refund.status, refund.text).toBe(201);
    const after = await eventually(async () => {
      const b = await balance(http, key, customer);
      return b.shortfall_points > 0 && b;
    }, 20_000, 'the reversal');
    expect(after).toMatchObject({ points_balance: 0, shortfall_points: 90, lifetime_points: 0, available_rewards: [] });
    const blocked = await redeem(http, key, customer, { id: reward.id, cost: 90 });
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ code: 'insufficient_points', points_balance: 0, shortfall_points: 90 });
    expect(blocked.body.detail).toContain('90 reversed points');
    const reversed = await events('rewards.points.reversed', customer);
    expect(reversed.map((e) => [e.points_change, e.shortfall_change, e.reason])).toEqual([[-32, 0, 'payment_refunded'], [-7, 90, 'payment_refunded']]);

    // Earned back: the next points pay the shortfall first.
    await award(http, key, { customer_id: customer, points: 150 });
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 60, shortfall_points: 0 });
    await expectLedgerExplainsBalance(platform, customer);
  });
});

describe('bad input', () => {
  it('names the field, with 404 for customers and rewards it cannot see', async () => {
    const { key, customer } = await freshAccount(platform, http);
    const other = await freshAccount(platform, http);
    const bad = async (body: Record<string, unknown>, status: number, path: string) => {
      const res = await http('/v3/rewards/points/award', { key, body: { customer_id: customer, points: 10, reason: 'x', ...body } });
      expect(res.status, `${JSON.stringify(body)} → ${res.text}`).toBe(status);
      expect(res.body.errors?.map((e: { path: string }) => e.path), res.text).toContain(path);
      expect(res.body.suggestion).toBeTruthy();
    };
    await bad({ points: -5 }, 422, 'points');
    await bad({ points: 0 }, 422, 'points');
    await bad({ points: 1.5 }, 422, 'points');
    await bad({ points: 1e20 }, 422, 'points');
    await bad({ multiplier: 0.5 }, 422, 'multiplier');
    await bad({ multiplier: 11 }, 422, 'multiplier');
    await bad({ multiplier: 1.23456 }, 422, 'multiplier');
    await bad({ reason: 'nul\u0000byte' }, 422, 'reason');
    await bad({ expires_at: '2020-01-01T00:00:00Z' }, 422, 'expires_at');
    await bad({ expires_at: '01/02/2030' }, 422, 'expires_at');
    await bad({ customer_id: 'cus_unknown' }, 404, 'customer_id');
    await bad({ customer_id: other.customer }, 404, 'customer_id');
    expect((await http(`/v3/rewards/customers/${other.customer}/balance`, { key })).status).toBe(404);
    expect((await http(`/v3/loyalty/customers/${other.customer}/ledger`, { key })).status).toBe(404);

    const reward = await newReward(http, key, { cost: 300 });
    const wrongCost = await http('/v3/rewards/redeem', { key, body: { customer_id: customer, reward_id: reward.id, points_used: 200 } });
    expect(wrongCost.status).toBe(422);
    expect(wrongCost.body.errors).toEqual([{ path: 'points_used', message: 'must equal the reward\'s cost: 300 points' }]);
    const unknownReward = await http('/v3/loyalty/redeem', { key, body: { customer_id: customer, reward_id: 'rwd_nope', points_used: 300 } });
    expect(unknownReward.status).toBe(404);
    expect(unknownReward.body.errors[0].path).toBe('reward_id');
    const foreignReward = await http('/v3/rewards/redeem', { key: other.key, body: { customer_id: other.customer, reward_id: reward.id, points_used: 300 } });
    expect(foreignReward.status).toBe(404);

    const program = await http('/v3/loyalty/program', { key, method: 'PUT', body: { tiers: [{ name: 'gold', threshold: 10, earn_multiplier: 2 }], return_window_days: -1 } });
    expect(program.status).toBe(422);
    expect(program.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['return_window_days', 'tiers']);
    const live = await platform.newKey({ accountId: (await platform.newAccount()), type: 'live' });
    const liveClock = await http('/v3/rewards/test_clock', { key: live, body: { frozen_time: '2025-01-01T00:00:00Z' } });
    expect(liveClock.status).toBe(403);
    expect(liveClock.body.code).toBe('test_mode_only');
  });

  it('applies a program\'s earn rules, return window and tiers as PUT', async () => {
    const { key, customer } = await freshAccount(platform, http);
    const put = await http('/v3/loyalty/program', {
      key, method: 'PUT',
      body: {
        earn_rules: [{ currency: 'jpy', points_per_unit: 0.01 }], return_window_days: 0, points_expiry_months: null,
        tiers: [{ name: 'member', threshold: 0, earn_multiplier: 1 }, { name: 'vip', threshold: 100, earn_multiplier: 3 }],
        downgrade_policy: { type: 'never' },
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      object: 'loyalty_program', earn_rules: [{ currency: 'JPY', points_per_unit: 0.01 }], return_window_days: 0, points_expiry_months: null,
      downgrade_policy: { type: 'never', max_tiers_down: 1 }, test_clock: null,
    });
    expect((await http('/v3/rewards/program', { key })).body).toEqual(put.body);
    await award(http, key, { customer_id: customer, points: 100 });
    const vip = await award(http, key, { customer_id: customer, points: 10, order_id: 'ord_x', reason: 'purchase' });
    // No return window: available at once; no expiry.
    expect(vip).toMatchObject({ tier: 'vip', credited_points: 30, status: 'available', expires_at: null });
    expect(await balance(http, key, customer)).toMatchObject({ points_balance: 130, tier: { current: 'vip', next_tier: null, points_to_next: null }, tier_review_at: null });
  });
});
