import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { refreshRollup } from '../../domain/analytics/queries.ts';
import { advance, card, newClock, newCustomer, newPlan } from '../billing/support.ts';
import { AreaFixtures } from './support.ts';

/**
 * Revenue from the ERP ledger, the other areas' KPIs and MRR movements that see plan changes,
 * against figures computed by hand (docs/analytics.md has the rules). One account holds March 2025
 * (USD); live-mode rows must never show up in test mode.
 */

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;

usePlatform({ ownAccount: true, worker: true }, (t) => ({ platform, http, key, accountId } = t));

const MARCH = 'period=custom&start=2025-03-01&end=2025-03-31&currency=USD';

describe('revenue from the ledger, with a fallback for what it has not posted', () => {
  beforeAll(async () => {
    const fx = new AreaFixtures(platform, accountId);
    const c = await fx.customer();
    const plan = await fx.plan(10_000, 'USD', 'monthly');
    const sub = await fx.subscription(c, plan, '2025-01-01T00:00:00Z');

    // Posted: the ledger's amount counts (10500, not the invoice's 10000).
    const inv1 = await fx.paidInvoice(sub, c, 10_000, 'USD', '2025-03-05T10:00:00Z');
    await fx.ledgerPosting('revenue', inv1.invoiceId, 10_500, 'USD', '2025-03-05T10:00:05Z');
    // Not posted yet: the invoice counts (5000).
    const inv2 = await fx.paidInvoice(sub, c, 5000, 'USD', '2025-03-06T10:00:00Z');
    // Posted, then reversed on the 20th: +3000 on the 7th, −3000 on the 20th.
    const a = await fx.payment(3000, 'USD', '2025-03-07T12:00:00Z');
    const aPosting = await fx.ledgerPosting('transfer', a, 3000, 'USD', '2025-03-07T12:00:03Z');
    await fx.ledgerReversal(aPosting, '2025-03-20T12:00:00Z');
    // Not posted: 2000, and its refund −500.
    const b = await fx.payment(2000, 'USD', '2025-03-08T12:00:00Z');
    await fx.refund(b, 500, 'USD', '2025-03-12T12:00:00Z');
    // Posted with two refunds, the ledger having posted the first only: 4000 − 1000 − 600.
    const d = await fx.payment(4000, 'USD', '2025-03-09T12:00:00Z');
    await fx.ledgerPosting('transfer', d, 4000, 'USD', '2025-03-09T12:00:02Z');
    await fx.refund(d, 1000, 'USD', '2025-03-15T12:00:00Z');
    await fx.refund(d, 600, 'USD', '2025-03-16T12:00:00Z');
    await fx.ledgerPosting('refund', d, 1000, 'USD', '2025-03-15T12:00:02Z');
    // Posted, at 23:30 UTC on the 31st (1 April 01:30 in Berlin).
    const e = await fx.payment(7000, 'USD', '2025-03-31T23:30:00Z');
    await fx.ledgerPosting('transfer', e, 7000, 'USD', '2025-03-31T23:30:02Z');

    // Live mode: a posting naming a test invoice neither replaces it nor counts.
    const live = new AreaFixtures(platform, accountId, true);
    await live.ledgerPosting('revenue', inv2.invoiceId, 99_999, 'USD', '2025-03-06T10:00:02Z');
  });

  it('counts the ledger\'s postings and reversals, and the source for the rest', async () => {
    const res = await http(`/v3/analytics/revenue?${MARCH}`, { key });
    expect(res.status, res.text).toBe(200);
    // gross 10500 + 5000 + 3000 − 3000 + 2000 + 4000 + 7000 = 28500; refunds −2100.
    expect(res.body).toMatchObject({
      total_revenue: 264, refunds: -21, breakdown: { subscriptions: 155, one_time: 109 },
    });
    const trend = Object.fromEntries(res.body.trends.map((t: { date: string; revenue: number }) => [t.date, t.revenue]));
    expect([trend['2025-03-05'], trend['2025-03-06'], trend['2025-03-07'], trend['2025-03-20'], trend['2025-03-15'], trend['2025-03-31']])
      .toEqual([105, 50, 30, -30, -10, 70]);
  });

  it('keeps the reporting time zone: the posting at 23:30 UTC belongs to 1 April in Berlin', async () => {
    const res = await http(`/v3/analytics/revenue?${MARCH}&timezone=Europe/Berlin`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.total_revenue).toBe(194);
  });

  it('answers the same from the rollup as live (a reversal is not a refund)', async () => {
    const before = await http(`/v3/analytics/kpis?${MARCH}`, { key });
    expect(before.body.kpis.refund_rate.value).toBe(7.37); // 2100 / 28500
    await refreshRollup(platform.orm.em.fork(), { accountId, livemode: false });
    const res = await http(`/v3/analytics/revenue?${MARCH}`, { key });
    expect(res.body).toMatchObject({ total_revenue: 264, refunds: -21, breakdown: { subscriptions: 155, one_time: 109 } });
    const after = await http(`/v3/analytics/kpis?${MARCH}`, { key });
    expect(after.body.kpis.refund_rate.value).toBe(7.37);
  });

  it('never mixes modes: live sees only its own ledger posting of an unknown invoice (nothing)', async () => {
    const liveKey = await platform.newKey({ accountId, type: 'live' });
    const res = await http(`/v3/analytics/revenue?${MARCH}`, { key: liveKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body.total_revenue).toBe(0);
  });
});

describe('KPIs of shipping, warehouses, communications and rewards', () => {
  beforeAll(async () => {
    const fx = new AreaFixtures(platform, accountId);
    // Deliveries in March: two by the promised date, one late; one in February (previous period, on time).
    await fx.shipment('2025-03-05T20:00:00Z', '2025-03-05T15:00:00Z');
    await fx.shipment('2025-03-10T20:00:00Z', '2025-03-10T20:00:00Z');
    await fx.shipment('2025-03-12T20:00:00Z', '2025-03-14T09:00:00Z');
    await fx.shipment('2025-02-10T20:00:00Z', '2025-02-09T09:00:00Z');
    await fx.shipment('2025-03-30T20:00:00Z', null); // still in transit
    // Stock: 100 received in February, 30 out for orders and 20 received in March; 90 on hand today.
    await fx.stock(90, [
      { change: 100, reason: 'procurement_receipt', at: '2025-02-20T09:00:00Z' },
      { change: -30, reason: 'order_fulfillment', at: '2025-03-10T09:00:00Z' },
      { change: 20, reason: 'procurement_receipt', at: '2025-03-20T09:00:00Z' },
    ]);
    // Calls in March: completed 60, 90 and 150 s; a failed one does not count.
    await fx.call('completed', 60, '2025-03-03T10:00:00Z');
    await fx.call('completed', 90, '2025-03-04T10:00:00Z');
    await fx.call('completed', 150, '2025-03-05T10:00:00Z');
    await fx.call('failed', 0, '2025-03-06T10:00:00Z');
    await fx.call('completed', 40, '2025-02-06T10:00:00Z');
    // Points in March: 1000 + (500 − 100 reversed) earned, 350 redeemed; February: 200 earned, 200 redeemed.
    const c = await fx.customer();
    await fx.pointsEarned(c, 1000, 0, '2025-03-02T10:00:00Z');
    await fx.pointsEarned(c, 500, 100, '2025-03-03T10:00:00Z');
    await fx.pointsRedeemed(c, 350, '2025-03-20T10:00:00Z');
    await fx.pointsEarned(c, 200, 0, '2025-02-02T10:00:00Z');
    await fx.pointsRedeemed(c, 200, '2025-02-20T10:00:00Z');
    // Live mode: a late delivery and a long call that must not show in test mode.
    const live = new AreaFixtures(platform, accountId, true);
    await live.shipment('2025-03-05T20:00:00Z', '2025-03-09T15:00:00Z');
    await live.call('completed', 9000, '2025-03-03T10:00:00Z');
  });

  it('computes each from its area\'s data, with the previous period', async () => {
    const res = await http(`/v3/analytics/kpis?${MARCH}`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.kpis.on_time_delivery_rate).toMatchObject({ value: 66.67, previous: 100, change_percent: -33.33, unit: 'percent', reason: null });
    // Out 30 over the mean of 100 on hand on 1 March and 90 on 1 April.
    expect(res.body.kpis.inventory_turnover).toMatchObject({ value: 0.32, previous: 0, unit: 'ratio' });
    expect(res.body.kpis.average_call_duration).toMatchObject({ value: 100, previous: 40, change_percent: 150, unit: 'seconds' });
    expect(res.body.kpis.points_redemption_rate).toMatchObject({ value: 25, previous: 100, change_percent: -75, unit: 'percent' });
  });

  it('is null with a reason where the area holds no data', async () => {
    const res = await http('/v3/analytics/kpis?period=custom&start=2024-03-01&end=2024-03-31&currency=USD', { key });
    expect(res.status, res.text).toBe(200);
    for (const name of ['on_time_delivery_rate', 'average_call_duration', 'points_redemption_rate', 'inventory_turnover']) {
      expect(res.body.kpis[name].value, name).toBeNull();
      expect(res.body.kpis[name].reason, name).toMatch(/no /);
    }
  });
});

describe('MRR movements that see plan changes', () => {
  let planAccount: string;
  let planKey: string;

  beforeAll(async () => {
    planAccount = await platform.newAccount();
    planKey = await platform.newKey({ accountId: planAccount });
    const fx = new AreaFixtures(platform, planAccount);
    const m30 = await fx.plan(3000, 'USD', 'monthly');
    const m50 = await fx.plan(5000, 'USD', 'monthly');
    const m10 = await fx.plan(1000, 'USD', 'monthly');
    const q90 = await fx.plan(9000, 'USD', 'quarterly'); // 3000 a month
    const [x, y, z, w, v] = await Promise.all([1, 2, 3, 4, 5].map(() => fx.customer()));
    const sx = await fx.subscription(x!, m30, '2025-01-01T00:00:00Z');
    await fx.changePlan(sx, m50, '2025-03-10T00:00:00Z'); // expansion 20
    const sy = await fx.subscription(y!, q90, '2025-01-01T00:00:00Z');
    await fx.changePlan(sy, m10, '2025-03-12T00:00:00Z'); // contraction 20
    const sz = await fx.subscription(z!, m30, '2025-02-03T00:00:00Z', { canceledAt: '2025-03-25T00:00:00Z' });
    await fx.changePlan(sz, m50, '2025-03-05T00:00:00Z'); // churned: 30 at the start
    const sw = await fx.subscription(w!, m30, '2025-03-02T00:00:00Z');
    await fx.changePlan(sw, m50, '2025-03-15T00:00:00Z'); // new: 50 at the end
    const sv = await fx.subscription(v!, m50, '2025-01-01T00:00:00Z');
    await fx.changePlan(sv, m30, '2025-02-10T00:00:00Z'); // contraction in February only
  });

  it('splits new, expansion, contraction and churn by each customer\'s price over time', async () => {
    const res = await http(`/v3/analytics/revenue?${MARCH}`, { key: planKey });
    expect(res.status, res.text).toBe(200);
    // t0: x 30 + y 30 + z 30 + v 30 = 120; t1: x 50 + y 10 + w 50 + v 30 = 140 = 120 + 50 + 20 − 20 − 30.
    expect(res.body.mrr).toEqual({ current: 140, new: 50, expansion: 20, contraction: 20, churned: 30 });
  });

  it('dates a change at its time: February saw v contract from 50 to 30', async () => {
    const res = await http('/v3/analytics/revenue?period=custom&start=2025-02-01&end=2025-02-28&currency=USD', { key: planKey });
    expect(res.status, res.text).toBe(200);
    // t0: x 30 + y 30 + v 50 = 110; t1: x 30 + y 30 + z 30 + v 30 = 120.
    expect(res.body.mrr).toEqual({ current: 120, new: 30, expansion: 0, contraction: 20, churned: 0 });
    const kpis = await http('/v3/analytics/kpis?period=custom&start=2025-02-01&end=2025-02-28&currency=USD', { key: planKey });
    expect(kpis.body.kpis.mrr.value).toBe(120);
    expect(kpis.body.kpis.active_subscriptions.value).toBe(4);
  });

  it('records a plan change made through the billing API (the subscription workflow\'s changePlan), at the clock\'s time', async () => {
    const basic = await newPlan(http, planKey, { amount: 3000, name: 'Basic' });
    const pro = await newPlan(http, planKey, { amount: 6000, name: 'Pro' });
    const clock = await newClock(http, planKey, '2025-06-01T00:00:00Z');
    const customer = await newCustomer(http, planKey);
    const sub = await http('/v3/subscriptions', { key: planKey, body: { customer_id: customer, plan_id: basic.id, auto_collection: true, payment_method: card(), test_clock: clock } });
    expect(sub.status, sub.text).toBe(201);
    await advance(http, planKey, clock, '2025-06-16T00:00:00Z');
    const changed = await http(`/v3/subscriptions/${sub.body.id}`, { method: 'PATCH', key: planKey, body: { plan_id: pro.id } });
    expect(changed.status, changed.text).toBe(200);
    // The account's other customers hold 140 a month throughout. 2–10 June: no change yet (170);
    // 10–20 June: this customer went from 30 to 60 on the 16th, an expansion of 30.
    const early = await http('/v3/analytics/revenue?period=custom&start=2025-06-02&end=2025-06-10&currency=USD', { key: planKey });
    expect(early.body.mrr).toEqual({ current: 170, new: 0, expansion: 0, contraction: 0, churned: 0 });
    const res = await http('/v3/analytics/revenue?period=custom&start=2025-06-10&end=2025-06-20&currency=USD', { key: planKey });
    expect(res.body.mrr).toEqual({ current: 200, new: 0, expansion: 30, contraction: 0, churned: 0 });
  });
});
