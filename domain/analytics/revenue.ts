import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import { toMajorNumber } from '../money.ts';
import type { Scope } from '../scope.ts';
import { MIN_COARSE_POINTS, MIN_DAILY_POINTS, backtest, forecastSeries, type ForecastModel } from './forecast.ts';
import {
  addDays, addMonths, assertTimeZone, bucketStart, bucketStarts, localToday, previousWindow, resolvePeriod,
  type DateWindow, type Granularity, type PeriodName,
} from './periods.ts';
import { Converter, dailyRevenueSeries, dominantCurrency, mrrMovements, revenueByBucket } from './queries.ts';
import type { RevenueAnalyticsView, RevenueForecastView } from './schemas.ts';

/** Revenue analytics (GET /v3/analytics/revenue) and forecasting (GET /v3/analytics/revenue-forecasting). */

export interface RevenueQuery {
  period: PeriodName;
  start?: string | undefined;
  end?: string | undefined;
  currency?: string | undefined;
  timezone: string;
  granularity: Granularity;
}

const growth = (current: number, previous: number): number | null =>
  previous === 0 ? null : Math.round(((current - previous) / Math.abs(previous)) * 10_000) / 100;

export async function revenueAnalytics(em: EntityManager, scope: Scope, q: RevenueQuery, now: Date): Promise<RevenueAnalyticsView> {
  await assertTimeZone(em, q.timezone);
  const window = resolvePeriod(q, now);
  const previous = previousWindow(window);
  const currency = q.currency ?? (await dominantCurrency(em, scope, window));
  const converter = await Converter.load(em, scope, currency);

  const [rows, prevRows, mrr] = await Promise.all([
    revenueByBucket(em, scope, window, q.granularity),
    revenueByBucket(em, scope, previous, 'month'),
    mrrMovements(em, scope, window, now),
  ]);
  const trends = new Map(bucketStarts(window, q.granularity).map((b) => [b < window.start ? window.start : b, 0]));
  const breakdown = { subscriptions: 0, one_time: 0 };
  let refunds = 0;
  for (const r of rows) {
    const net = converter.convert(r.gross + r.refunds, r.currency);
    trends.set(r.bucket, (trends.get(r.bucket) ?? 0) + net);
    breakdown[r.stream] += net;
    refunds += converter.convert(r.refunds, r.currency);
  }
  const previousTotal = prevRows.reduce((s, r) => s + converter.convert(r.gross + r.refunds, r.currency), 0);
  const m = { current: 0, new: 0, expansion: 0, contraction: 0, churned: 0 };
  for (const a of mrr) for (const k of Object.keys(m) as (keyof typeof m)[]) m[k] += converter.convert(a[k], a.currency);
  converter.check();

  const total = breakdown.subscriptions + breakdown.one_time;
  const major = (minor: number) => toMajorNumber(minor, currency);
  const forecast = await revenueForecastSummary(em, scope, currency, converter, now, q.timezone);
  return {
    object: 'revenue_analytics', livemode: scope.livemode, period: q.period,
    start_date: window.start, end_date: window.end, timezone: q.timezone, currency, granularity: q.granularity,
    total_revenue: major(total),
    growth_rate: growth(total, previousTotal),
    previous_period: { start_date: previous.start, end_date: previous.end, total_revenue: major(previousTotal) },
    refunds: major(refunds),
    breakdown: { subscriptions: major(breakdown.subscriptions), one_time: major(breakdown.one_time) },
    forecast,
    trends: [...trends.entries()].map(([date, revenue]) => ({ date, revenue: major(revenue) })),
    mrr: { current: major(m.current), new: major(m.new), expansion: major(m.expansion), contraction: major(m.contraction), churned: major(m.churned) },
  };
}

// ---- Forecasting ----------------------------------------------------------------------------------

export const MAX_HORIZON_DAYS = 365;
/** How far back the forecaster reads (two years: two yearly cycles of weekly seasons). */
const HISTORY_DAYS = 730;

interface Series {
  dates: string[];
  values: number[];
  /** Days with any revenue entry. */
  daysWithData: number;
}

/**
 * Histories read from the rollup alone, by what they depend on: once the rollup's watermark is past
 * today's local midnight, everything up to yesterday comes from the rollup, which changes only when
 * it is refreshed (`refreshed_at` is in the key).
 */
const historyCache = new Map<string, Series>();

/** Daily history from the first day with revenue up to yesterday (today is still partial). */
async function dailyHistory(em: EntityManager, scope: Scope, converter: Converter, today: string, timezone: string): Promise<Series> {
  const [state] = await em.execute<{ covers: boolean; refreshed_at: string }[]>(
    `select refreshed_through >= ((?::date)::timestamp at time zone ?) as covers, refreshed_at::text as refreshed_at
       from analytics_rollup_state where account_id = ? and livemode = ?`,
    [today, timezone, scope.accountId, scope.livemode],
  );
  const key = state?.covers ? [scope.accountId, scope.livemode, converter.target, timezone, today, state.refreshed_at].join('|') : null;
  const hit = key ? historyCache.get(key) : undefined;
  if (hit) return hit;
  const window: DateWindow = { start: addDays(today, -HISTORY_DAYS), end: addDays(today, -1), timezone };
  const s = await dailyRevenueSeries(em, scope, window, converter);
  const series = { dates: s.dates, values: s.values, daysWithData: s.daysWithData };
  if (key && converter.missing.size === 0) {
    historyCache.set(key, series);
    if (historyCache.size > CACHE_SIZE) historyCache.delete(historyCache.keys().next().value!);
  }
  return series;
}

/** Complete buckets only (a week or month still running at the end is left out). */
function coarsen(daily: Series, granularity: Granularity): Series {
  if (granularity === 'day') return daily;
  const sums = new Map<string, number>();
  daily.dates.forEach((d, i) => {
    const b = bucketStart(d, granularity);
    sums.set(b, (sums.get(b) ?? 0) + daily.values[i]!);
  });
  const last = daily.dates.at(-1);
  const dates = [...sums.keys()].filter((b) => {
    if (!last) return false;
    const next = granularity === 'week' ? addDays(b, 7) : addMonths(b, 1);
    return addDays(next, -1) <= last && b >= daily.dates[0]!;
  });
  return { dates, values: dates.map((d) => sums.get(d)!), daysWithData: daily.daysWithData };
}

function insufficientHistory(have: number, need: number, unit: string): ApiError {
  return new ApiError({
    status: 422, code: 'insufficient_history', title: 'Not Enough History',
    detail: `Forecasting needs at least ${need} ${unit} with revenue; this account has ${have}.`,
    suggestion: have === 0
      ? 'Record some paid invoices or payments first, or ask in the other mode (test keys see test data).'
      : `Try again when ${need - have} more ${unit} of data exist, or use a finer granularity.`,
    errors: [{ path: 'horizon', message: `at least ${need} ${unit} with revenue are needed (have ${have})` }],
    extensions: { required: need, available: have, unit },
  });
}

interface Computed {
  model: ForecastModel;
  points: { date: string; forecast: number; lower_80: number; upper_80: number; lower_95: number; upper_95: number }[];
  holdout: number;
  mape: number | null;
}

/** Fitted forecasts, by the series they were fitted on (identical input, identical answer). */
const cache = new Map<string, Computed>();
const CACHE_SIZE = 500;

function computeForecast(series: Series, granularity: Granularity, horizonDays: number): Computed {
  const steps = granularity === 'day' ? horizonDays : granularity === 'week' ? Math.ceil(horizonDays / 7) : Math.ceil(horizonDays / 30.4375);
  const key = createHash('sha256').update(JSON.stringify([series, granularity, steps])).digest('base64url');
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const seasonal = granularity === 'day';
  const f = forecastSeries(series.values, steps, seasonal);
  const bt = backtest(series.values, steps, seasonal);
  const last = series.dates.at(-1)!;
  const dates: string[] = [];
  for (let i = 1; i <= steps; i++) {
    dates.push(granularity === 'day' ? addDays(last, i) : granularity === 'week' ? addDays(last, 7 * i) : addMonths(last, i));
  }
  const computed: Computed = {
    model: f.model, holdout: bt.holdout, mape: bt.mape === null ? null : Math.round(bt.mape * 100) / 100,
    points: dates.map((date, i) => ({
      date, forecast: f.point[i]!, lower_80: f.lower80[i]!, upper_80: f.upper80[i]!, lower_95: f.lower95[i]!, upper_95: f.upper95[i]!,
    })),
  };
  cache.set(key, computed);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return computed;
}

function requireHistory(series: Series, granularity: Granularity): void {
  if (series.daysWithData < MIN_DAILY_POINTS) throw insufficientHistory(series.daysWithData, MIN_DAILY_POINTS, 'days');
  if (granularity !== 'day' && series.values.length < MIN_COARSE_POINTS) {
    throw insufficientHistory(series.values.length, MIN_COARSE_POINTS, `complete ${granularity}s`);
  }
}

export async function revenueForecast(
  em: EntityManager, scope: Scope, q: { horizon: number; granularity: Granularity; currency?: string | undefined; timezone: string }, now: Date,
): Promise<RevenueForecastView> {
  await assertTimeZone(em, q.timezone);
  const today = localToday(q.timezone, now);
  const currency = q.currency ?? (await dominantCurrency(em, scope, { start: addDays(today, -HISTORY_DAYS), end: today, timezone: q.timezone }));
  const converter = await Converter.load(em, scope, currency);
  const daily = await dailyHistory(em, scope, converter, today, q.timezone);
  converter.check();
  const series = coarsen(daily, q.granularity);
  requireHistory(series, q.granularity);
  const c = computeForecast(series, q.granularity, q.horizon);
  const major = (v: number) => toMajorNumber(Math.round(v), currency);
  return {
    object: 'revenue_forecast', livemode: scope.livemode, currency, granularity: q.granularity, horizon: q.horizon, model: c.model,
    backtest: { holdout_points: c.holdout, mape: c.mape },
    history: { start_date: series.dates[0]!, end_date: daily.dates.at(-1)!, points: series.values.length },
    points: c.points.map((p) => ({
      date: p.date, forecast: major(p.forecast), lower_80: major(p.lower_80), upper_80: major(p.upper_80),
      lower_95: major(p.lower_95), upper_95: major(p.upper_95),
    })),
  };
}

/** The `forecast` field of /revenue: the next 30 days by the daily model, or null with the reason. */
async function revenueForecastSummary(
  em: EntityManager, scope: Scope, currency: string, converter: Converter, now: Date, timezone: string,
): Promise<RevenueAnalyticsView['forecast']> {
  const today = localToday(timezone, now);
  const daily = await dailyHistory(em, scope, converter, today, timezone);
  if (daily.daysWithData < MIN_DAILY_POINTS) {
    return {
      next_30_days: null, confidence: null, model: null,
      reason: `forecasting needs at least ${MIN_DAILY_POINTS} days with revenue; ${daily.daysWithData} available`,
    };
  }
  const c = computeForecast(daily, 'day', 30);
  const total = c.points.reduce((s, p) => s + p.forecast, 0);
  return {
    next_30_days: toMajorNumber(Math.round(total), currency),
    confidence: c.mape === null ? null : Math.max(0, Math.round((1 - c.mape / 100) * 1000) / 1000),
    model: c.model,
    reason: null,
  };
}

