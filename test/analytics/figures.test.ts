import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { Fixtures, adminCaller, seededNormal } from './support.ts';

/**
 * Revenue, MRR movements, KPIs and forecasts against figures computed by hand (docs/analytics.md
 * has the formulas). One account holds March 2025 in USD, EUR and JPY, with a payment on each side
 * of a Europe/Berlin day boundary; live-mode rows must never show up in test mode.
 */

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;

usePlatform({ ownAccount: true }, (t) => ({ platform, http, key, accountId } = t));

const MARCH = 'period=custom&start=2025-03-01&end=2025-03-31';

describe('revenue and KPIs from hand-computed fixtures', () => {
  beforeAll(async () => {
    const fx = new Fixtures(platform, accountId);
    await fx.rate('EUR', 'USD', '1.1');
    await fx.rate('USD', 'JPY', '150'); // JPY → USD uses the inverse of a stored rate

    const [c1, c2, c3, c4, c5, c6] = await Promise.all([1, 2, 3, 4, 5, 6].map(() => fx.customer()));
    const monthly = await fx.plan(3000, 'USD', 'monthly');
    const yearlyEur = await fx.plan(12_000, 'EUR', 'yearly'); // 1000 EUR a month
    const quarterly = await fx.plan(9000, 'USD', 'quarterly'); // 3000 USD a month
    const s1 = await fx.subscription(c1!, monthly, '2025-01-01T00:00:00Z');
    await fx.subscription(c2!, monthly, '2025-01-15T00:00:00Z', { canceledAt: '2025-03-20T00:00:00Z' }); // churned
    await fx.subscription(c3!, yearlyEur, '2025-03-03T00:00:00Z'); // new
    await fx.subscription(c4!, monthly, '2025-02-01T00:00:00Z');
    await fx.subscription(c4!, quarterly, '2025-03-08T00:00:00Z'); // expansion
    await fx.subscription(c5!, quarterly, '2025-01-10T00:00:00Z');
    await fx.subscription(c5!, monthly, '2025-01-10T00:00:00Z', { canceledAt: '2025-03-15T00:00:00Z' }); // contraction
    await fx.subscription(c6!, monthly, '2025-03-01T12:00:00Z', { trialEnd: '2025-04-15T00:00:00Z' }); // trialing: no MRR yet

    // March (UTC): subscriptions 10000 − 500; one-time 5000 − 1000 + 2200 (2000 EUR) + 667 (1000 JPY) + 4000 + 300 (split fee).
    const invoice = await fx.paidInvoice(s1, c1!, 10_000, 'USD', '2025-03-05T10:00:00Z');
    await fx.refund(invoice.paymentId, 500, 'USD', '2025-03-25T10:00:00Z');
    const b = await fx.payment(5000, 'USD', '2025-03-10T12:00:00Z');
    await fx.refund(b, 1000, 'USD', '2025-03-12T09:00:00Z');
    await fx.payment(2000, 'EUR', '2025-03-15T12:00:00Z');
    await fx.payment(1000, 'JPY', '2025-03-20T12:00:00Z');
    await fx.payment(4000, 'USD', '2025-03-31T23:30:00Z'); // 1 April 01:30 in Berlin (CEST)
    await fx.payment(700, 'USD', '2025-02-28T23:30:00Z'); // 1 March 00:30 in Berlin (CET)
    await fx.payment(10_000, 'USD', '2025-03-18T12:00:00Z', { split: { fee: 300 } });
    await fx.payment(9999, 'USD', '2025-03-11T12:00:00Z', { status: 'failed' });
    await fx.paidInvoice(s1, c1!, 10_000, 'USD', '2025-02-10T10:00:00Z'); // previous period
    const live = new Fixtures(platform, accountId, true);
    await live.payment(123_456, 'USD', '2025-03-10T12:00:00Z');

    const store = await fx.store();
    await fx.order(store, c1!, 2500, 'USD', '2025-03-03T10:00:00Z', { fulfilledAt: '2025-03-04T10:00:00Z', units: 2 });
    await fx.order(store, c2!, 1000, 'EUR', '2025-03-05T10:00:00Z', { fulfilledAt: '2025-03-05T22:00:00Z' });
    await fx.order(store, c3!, 9999, 'USD', '2025-03-06T10:00:00Z', { status: 'canceled' });
  });

  it('answers the spec\'s revenue shape, converted, net of refunds, with growth and MRR movements', async () => {
    const res = await http(`/v3/analytics/revenue?${MARCH}&currency=USD`, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      object: 'revenue_analytics', livemode: false, period: 'custom', start_date: '2025-03-01', end_date: '2025-03-31',
      timezone: 'UTC', currency: 'USD', granularity: 'day',
      total_revenue: 206.67, refunds: -15,
      breakdown: { subscriptions: 95, one_time: 111.67 },
      previous_period: { start_date: '2025-01-29', end_date: '2025-02-28', total_revenue: 107 },
      growth_rate: 93.15,
      mrr: { current: 131, new: 11, expansion: 30, contraction: 30, churned: 30 },
    });
    expect(res.body.trends).toHaveLength(31);
    const trend = Object.fromEntries(res.body.trends.map((t: { date: string; revenue: number }) => [t.date, t.revenue]));
    expect([trend['2025-03-10'], trend['2025-03-12'], trend['2025-03-20'], trend['2025-03-31'], trend['2025-03-02']]).toEqual([50, -10, 6.67, 40, 0]);
    expect(res.body.forecast).toMatchObject({ next_30_days: null, confidence: null });
    expect(res.body.forecast.reason).toMatch(/14 days/);
  });

  it('cuts days in the requested time zone (DST-aware), moving the boundary payments', async () => {
    const res = await http(`/v3/analytics/revenue?${MARCH}&currency=USD&timezone=Europe/Berlin&granularity=week`, { key });
    expect(res.status, res.text).toBe(200);
    // 4000 leaves March (1 April in Berlin), 700 enters it (1 March in Berlin).
    expect(res.body).toMatchObject({ total_revenue: 173.67, breakdown: { subscriptions: 95, one_time: 78.67 }, previous_period: { total_revenue: 100 }, growth_rate: 73.67 });
    // Weeks start on Monday; the first is labelled with the period's first day.
    expect(res.body.trends.map((t: { date: string }) => t.date)).toEqual(['2025-03-01', '2025-03-03', '2025-03-10', '2025-03-17', '2025-03-24', '2025-03-31']);
    expect(res.body.trends[0].revenue).toBe(7); // Saturday 1 and Sunday 2 March: the 700
  });

  it('reads the same figures from the refreshed rollup as from the live tables', async () => {
    const before = await http(`/v3/analytics/revenue?${MARCH}&currency=USD&timezone=Asia/Kathmandu`, { key });
    const admin = adminCaller(platform);
    const refreshed = await admin.analytics.refreshRollups({ accountId, livemode: false, operator: 'ops@example.com', reason: 'test: compare rollup with live' });
    expect(refreshed.buckets).toBeGreaterThan(5);
    const after = await http(`/v3/analytics/revenue?${MARCH}&currency=USD&timezone=Asia/Kathmandu`, { key });
    expect(after.body).toEqual(before.body);
    const actions = await admin.analytics.actions({ target: `${accountId}:test` });
    expect(actions[0]).toMatchObject({ operator: 'ops@example.com', action: 'refresh_rollups' });
    // An entry after the watermark is read live at once.
    const fresh = new Fixtures(platform, accountId);
    await fresh.payment(100, 'USD', new Date(Date.now() + 3_600_000).toISOString());
    const today = new Date(Date.now() + 3_600_000).toISOString().slice(0, 10);
    const now = await http(`/v3/analytics/revenue?period=custom&start=${today}&end=${today}&currency=USD`, { key });
    expect(now.body.total_revenue).toBe(1);
  });

  it('computes every KPI, with the previous period and the change, and null with a reason where data is missing', async () => {
    const res = await http(`/v3/analytics/kpis?${MARCH}&currency=USD`, { key });
    expect(res.status, res.text).toBe(200);
    const k = res.body.kpis;
    expect(k.mrr).toEqual({ value: 131, previous: 150, change_percent: -12.67, unit: 'currency', reason: null });
    expect(k.arr).toMatchObject({ value: 1572, previous: 1800 });
    expect(k.monthly_recurring_revenue).toEqual(k.mrr);
    expect(k.active_subscriptions).toMatchObject({ value: 5, previous: 5, change_percent: 0, unit: 'count' });
    expect(k.churn_rate).toMatchObject({ value: 25, previous: 0, change_percent: null, unit: 'percent' });
    expect(k.arpu).toMatchObject({ value: 32.75, unit: 'currency' });
    const monthlyChurn = 1 - 0.75 ** (30.4375 / 31);
    expect(k.ltv.value).toBeCloseTo(3275 / monthlyChurn / 100, 2);
    expect(k.ltv).toMatchObject({ previous: null });
    expect(k.orders).toMatchObject({ value: 2, previous: 0, unit: 'count' });
    expect(k.average_order_value).toMatchObject({ value: 18, previous: null, unit: 'currency' });
    expect(k.refund_rate).toMatchObject({ value: 6.77, unit: 'percent' }); // 1500 / 22167
    expect(k.order_fulfillment_time).toMatchObject({ value: 18, unit: 'hours' });
    for (const name of ['on_time_delivery_rate', 'inventory_turnover', 'average_call_duration', 'points_redemption_rate', 'gross_margin', 'net_promoter_score', 'customer_acquisition_cost']) {
      expect(k[name].value, name).toBeNull();
      expect(k[name].reason, name).toMatch(/\w+/);
    }
    expect(res.body).toMatchObject({ object: 'kpis', currency: 'USD', previous_period: { start_date: '2025-01-29', end_date: '2025-02-28' } });
  });

  it('never mixes modes: a live key sees only the live payment', async () => {
    const liveKey = await platform.newKey({ accountId, type: 'live' });
    const res = await http(`/v3/analytics/revenue?${MARCH}`, { key: liveKey });
    expect(res.body).toMatchObject({ livemode: true, currency: 'USD', total_revenue: 1234.56, mrr: { current: 0 } });
  });

  it('refuses a currency it cannot convert into, and bad parameters, naming the field', async () => {
    const missing = await http(`/v3/analytics/revenue?${MARCH}&currency=GBP`, { key });
    expect(missing.status).toBe(422);
    expect(missing.body).toMatchObject({ code: 'exchange_rate_missing', errors: [{ path: 'currency' }] });
    expect(missing.body.missing_rates).toEqual(['EUR/GBP', 'JPY/GBP', 'USD/GBP']);

    const bad = await http('/v3/analytics/revenue?period=5d&granularity=hour&timezone=Mars/Olympus&currency=XYZ', { key });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['currency', 'granularity', 'period', 'timezone']);
    const custom = await http('/v3/analytics/kpis?period=custom&start=2025-03-31&end=2025-03-01', { key });
    expect(custom.status).toBe(422);
    expect(custom.body.errors).toEqual([{ path: 'end', message: 'end must not be before start' }]);
    const noEnd = await http('/v3/analytics/kpis?period=custom&start=2025-03-01', { key });
    expect(noEnd.body.errors[0].path).toBe('end');
    const dmy = await http('/v3/analytics/kpis?period=custom&start=01/03/2025&end=2025-03-31', { key });
    expect(dmy.body.errors[0]).toMatchObject({ path: 'start', message: expect.stringContaining('2025-03-01') });
    const nul = await http('/v3/analytics/revenue?timezone=UTC%00', { key });
    expect([nul.status, nul.body.errors[0].path]).toEqual([422, 'timezone']);
    const unknown = await http('/v3/analytics/revenue?colour=red', { key });
    expect([unknown.status, unknown.body.errors[0].path]).toEqual([422, 'colour']);
    const noScope = await http('/v3/analytics/revenue', { key: await platform.newKey({ accountId, type: 'restricted', mode: 'test', permissions: ['payments:read'] }) });
    expect([noScope.status, noScope.body.code]).toEqual([403, 'permission_denied']);
  });
});

describe('forecasting', () => {
  const DAY = 86_400_000;
  const shape = [0, 2000, 4000, 1000, -1000, -3000, -2000];
  const noise = seededNormal(42);
  // Daily revenue: a level, a trend of +50 a day, a weekly season and noise (sd 400).
  const truth = (t: number) => 20_000 + 50 * t + shape[t % 7]!;

  it('forecasts a synthetic series with trend and weekly season: intervals hold the truth at about their rate', async () => {
    const ownAccount = await platform.newAccount();
    const ownKey = await platform.newKey({ accountId: ownAccount });
    const fx = new Fixtures(platform, ownAccount);
    const today = new Date(Math.floor(Date.now() / DAY) * DAY);
    const days = 140;
    const start = today.getTime() - days * DAY;
    await fx.payments(Array.from({ length: days }, (_, t) => ({
      amount: Math.round(truth(t) + 400 * noise()), currency: 'USD', at: new Date(start + t * DAY + 12 * 3_600_000).toISOString(),
    })));

    const res = await http('/v3/analytics/revenue-forecasting?horizon=28', { key: ownKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ object: 'revenue_forecast', model: 'mstl_ets_weekly', currency: 'USD', horizon: 28, history: { points: days } });
    expect(res.body.points).toHaveLength(28);
    expect(res.body.points[0].date).toBe(today.toISOString().slice(0, 10));
    expect(res.body.backtest.mape).toBeLessThan(10);
    let in80 = 0;
    let in95 = 0;
    res.body.points.forEach((p: { forecast: number; lower_80: number; upper_80: number; lower_95: number; upper_95: number }, i: number) => {
      const actual = (truth(days + i) + 400 * noise()) / 100;
      expect(p.lower_95).toBeLessThanOrEqual(p.lower_80);
      expect(p.upper_95).toBeGreaterThanOrEqual(p.upper_80);
      expect(p.lower_80).toBeLessThanOrEqual(p.forecast);
      if (actual >= p.lower_80 && actual <= p.upper_80) in80 += 1;
      if (actual >= p.lower_95 && actual <= p.upper_95) in95 += 1;
    });
    expect(in80 / 28).toBeGreaterThan(0.55);
    expect(in95 / 28).toBeGreaterThan(0.8);
    // The weekly shape survives: the forecast peaks on the same weekday as the truth.
    const week = res.body.points.slice(0, 7).map((p: { forecast: number }) => p.forecast);
    const peak = week.indexOf(Math.max(...week));
    expect((days + peak) % 7).toBe(2);

    const revenue = await http('/v3/analytics/revenue?period=30d', { key: ownKey });
    expect(revenue.body.forecast.model).toBe('mstl_ets_weekly');
    const next30 = res.body.points.slice(0, 28).reduce((s: number, p: { forecast: number }) => s + p.forecast, 0);
    expect(revenue.body.forecast.next_30_days).toBeGreaterThan(next30);
    expect(revenue.body.forecast.confidence).toBeGreaterThan(0.9);

    const weekly = await http('/v3/analytics/revenue-forecasting?horizon=60&granularity=week', { key: ownKey });
    expect(weekly.status, weekly.text).toBe(200);
    expect(weekly.body).toMatchObject({ model: 'auto_ets', granularity: 'week' });
    expect(weekly.body.points).toHaveLength(9);
  });

  it('answers 422 with how much history it needs, and bounds the horizon', async () => {
    const ownAccount = await platform.newAccount();
    const ownKey = await platform.newKey({ accountId: ownAccount });
    const fx = new Fixtures(platform, ownAccount);
    const today = Math.floor(Date.now() / DAY) * DAY;
    await fx.payments(Array.from({ length: 10 }, (_, t) => ({ amount: 1000, currency: 'USD', at: new Date(today - (10 - t) * DAY + 3_600_000).toISOString() })));
    const res = await http('/v3/analytics/revenue-forecasting?horizon=30', { key: ownKey });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'insufficient_history', required: 14, available: 10, unit: 'days' });
    expect(res.body.suggestion).toMatch(/4 more days/);
    for (const horizon of ['0', '366', '1.5', '99999999999999999999']) {
      const bad = await http(`/v3/analytics/revenue-forecasting?horizon=${horizon}`, { key: ownKey });
      expect([bad.status, bad.body.errors?.[0]?.path], horizon).toEqual([422, 'horizon']);
    }
  });
});
