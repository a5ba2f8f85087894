import type { EntityManager } from '@mikro-orm/postgresql';
import { toMajorNumber } from '../money.ts';
import type { Scope } from '../scope.ts';
import { assertTimeZone, previousWindow, resolvePeriod, windowDays, type DateWindow, type PeriodName } from './periods.ts';
import {
  Converter, areaFacts, dominantCurrency, fulfilmentTimes, mrrMovements, ordersByDay, revenueByBucket, type AreaFacts, type MrrAggregate,
} from './queries.ts';
import { KPI_NAMES, type KpiName, type KpisView, type KpiView } from './schemas.ts';

/**
 * The KPI set (GET /v3/analytics/kpis). Each KPI is one entry of `KPIS`: its unit and either a
 * `compute` over a window or the reason it is not available yet. Adding one when its area lands
 * (shipping's on-time delivery, warehouses' turnover, communications' call duration, rewards'
 * redemptions) is one entry here reading that area's view (migration 0072). Facts shared by several KPIs
 * (MRR, revenue, orders) are read once per window and memoised.
 */

type Unit = KpiView['unit'];

/** A KPI's value over one window; null with a reason when the data does not define it. */
export type KpiOutcome = { value: number } | { value: null; reason: string };

export interface KpiWindowContext {
  em: EntityManager;
  scope: Scope;
  window: DateWindow;
  now: Date;
  converter: Converter;
  currency: string;
  /** Memoised facts of this window. */
  fact<T>(name: string, read: () => Promise<T>): Promise<T>;
}

interface KpiDefinition {
  unit: Unit;
  compute?: (ctx: KpiWindowContext) => Promise<KpiOutcome>;
  /** Why it has no value yet (no compute). */
  unavailable?: string;
}

const round = (v: number, places = 2) => Math.round(v * 10 ** places) / 10 ** places;

interface MrrFacts {
  current: number;
  previous: number;
  customersBefore: number;
  customersChurned: number;
  customersAfter: number;
  activeSubscriptions: number;
}

async function mrrFacts(ctx: KpiWindowContext): Promise<MrrFacts> {
  return ctx.fact('mrr', async () => {
    const rows: MrrAggregate[] = await mrrMovements(ctx.em, ctx.scope, ctx.window, ctx.now);
    const f: MrrFacts = { current: 0, previous: 0, customersBefore: 0, customersChurned: 0, customersAfter: 0, activeSubscriptions: 0 };
    for (const r of rows) {
      f.current += ctx.converter.convert(r.current, r.currency);
      f.previous += ctx.converter.convert(r.previous, r.currency);
      f.customersBefore += r.customersBefore;
      f.customersChurned += r.customersChurned;
      f.customersAfter += r.customersAfter;
      f.activeSubscriptions += r.activeSubscriptions;
    }
    return f;
  });
}

async function revenueFacts(ctx: KpiWindowContext): Promise<{ gross: number; refunds: number }> {
  return ctx.fact('revenue', async () => {
    const rows = await revenueByBucket(ctx.em, ctx.scope, ctx.window, 'month');
    return {
      gross: rows.reduce((s, r) => s + ctx.converter.convert(r.gross, r.currency), 0),
      refunds: rows.reduce((s, r) => s + ctx.converter.convert(-r.refunds, r.currency), 0),
    };
  });
}

/** Shipping, warehouses, communications and rewards facts of the window (one statement). */
const areas = (ctx: KpiWindowContext): Promise<AreaFacts> => ctx.fact('areas', () => areaFacts(ctx.em, ctx.scope, ctx.window));

async function orderFacts(ctx: KpiWindowContext): Promise<{ orders: number; gross: number }> {
  return ctx.fact('orders', async () => {
    const days = await ordersByDay(ctx.em, ctx.scope, ctx.window);
    let orders = 0;
    let gross = 0;
    for (const d of days) {
      orders += d.orders;
      if (d.currency && d.gross !== null) gross += ctx.converter.convert(d.gross, d.currency);
    }
    return { orders, gross };
  });
}

/** Customers lost in the window over customers paying at its start, as a fraction. */
async function churnFraction(ctx: KpiWindowContext): Promise<number | null> {
  const m = await mrrFacts(ctx);
  return m.customersBefore === 0 ? null : m.customersChurned / m.customersBefore;
}

async function arpuMinor(ctx: KpiWindowContext): Promise<number | null> {
  const m = await mrrFacts(ctx);
  return m.customersAfter === 0 ? null : m.current / m.customersAfter;
}

const money = (ctx: KpiWindowContext, minor: number) => toMajorNumber(Math.round(minor), ctx.currency);

const ltv = async (ctx: KpiWindowContext): Promise<KpiOutcome> => {
  const arpu = await arpuMinor(ctx);
  const churn = await churnFraction(ctx);
  if (arpu === null) return { value: null, reason: 'no paying subscribers at the end of the period' };
  if (churn === null) return { value: null, reason: 'no paying subscribers at the start of the period to measure churn against' };
  if (churn === 0) return { value: null, reason: 'no churn in the period: lifetime value is unbounded' };
  // Period churn as a monthly rate (30.4375 days), so LTV = monthly ARPU / monthly churn.
  const monthly = 1 - (1 - churn) ** (30.4375 / windowDays(ctx.window));
  return { value: money(ctx, arpu / monthly) };
};

const mrr = async (ctx: KpiWindowContext): Promise<KpiOutcome> => ({ value: money(ctx, (await mrrFacts(ctx)).current) });

export const KPIS: Record<KpiName, KpiDefinition> = {
  mrr: { unit: 'currency', compute: mrr },
  arr: { unit: 'currency', compute: async (ctx) => ({ value: money(ctx, (await mrrFacts(ctx)).current * 12) }) },
  active_subscriptions: { unit: 'count', compute: async (ctx) => ({ value: (await mrrFacts(ctx)).activeSubscriptions }) },
  churn_rate: {
    unit: 'percent',
    compute: async (ctx) => {
      const churn = await churnFraction(ctx);
      return churn === null ? { value: null, reason: 'no paying subscribers at the start of the period' } : { value: round(churn * 100) };
    },
  },
  arpu: {
    unit: 'currency',
    compute: async (ctx) => {
      const arpu = await arpuMinor(ctx);
      return arpu === null ? { value: null, reason: 'no paying subscribers at the end of the period' } : { value: money(ctx, arpu) };
    },
  },
  ltv: { unit: 'currency', compute: ltv },
  orders: { unit: 'count', compute: async (ctx) => ({ value: (await orderFacts(ctx)).orders }) },
  average_order_value: {
    unit: 'currency',
    compute: async (ctx) => {
      const o = await orderFacts(ctx);
      return o.orders === 0 ? { value: null, reason: 'no orders in the period' } : { value: money(ctx, o.gross / o.orders) };
    },
  },
  refund_rate: {
    unit: 'percent',
    compute: async (ctx) => {
      const r = await revenueFacts(ctx);
      return r.gross === 0 ? { value: null, reason: 'no money received in the period' } : { value: round((r.refunds / r.gross) * 100) };
    },
  },
  order_fulfillment_time: {
    unit: 'hours',
    compute: async (ctx) => {
      const f = await ctx.fact('fulfilment', () => fulfilmentTimes(ctx.em, ctx.scope, ctx.window));
      return f.meanSeconds === null ? { value: null, reason: 'no orders were fulfilled in the period' } : { value: round(f.meanSeconds / 3600) };
    },
  },
  on_time_delivery_rate: {
    unit: 'percent',
    compute: async (ctx) => {
      const d = await areas(ctx);
      return d.delivered === 0 ? { value: null, reason: 'no shipments were delivered in the period' } : { value: round((d.onTime / d.delivered) * 100) };
    },
  },
  inventory_turnover: {
    unit: 'ratio',
    compute: async (ctx) => {
      const s = await areas(ctx);
      const average = (s.onHandStart + s.onHandEnd) / 2;
      return average <= 0 ? { value: null, reason: 'no stock on hand in the period' } : { value: round(s.unitsOut / average) };
    },
  },
  average_call_duration: {
    unit: 'seconds',
    compute: async (ctx) => {
      const c = await areas(ctx);
      return c.callMeanSeconds === null ? { value: null, reason: 'no completed calls in the period' } : { value: round(c.callMeanSeconds, 1) };
    },
  },
  points_redemption_rate: {
    unit: 'percent',
    compute: async (ctx) => {
      const p = await areas(ctx);
      return p.pointsEarned === 0
        ? { value: null, reason: 'no loyalty points were earned in the period' }
        : { value: round((p.pointsRedeemed / p.pointsEarned) * 100) };
    },
  },
  monthly_recurring_revenue: { unit: 'currency', compute: mrr },
  customer_lifetime_value: { unit: 'currency', compute: ltv },
  customer_acquisition_cost: { unit: 'currency', unavailable: 'not computed yet: needs sales and marketing expenses from the ERP ledger, which analytics does not read yet' },
  net_promoter_score: { unit: 'score', unavailable: 'no customer survey responses are recorded by any area' },
  gross_margin: { unit: 'percent', unavailable: 'not computed yet: needs cost of goods sold from the ERP ledger, which analytics does not read yet' },
};

function windowContext(em: EntityManager, scope: Scope, window: DateWindow, now: Date, converter: Converter): KpiWindowContext {
  const facts = new Map<string, Promise<unknown>>();
  return {
    em, scope, window, now, converter, currency: converter.target,
    fact<T>(name: string, read: () => Promise<T>): Promise<T> {
      let f = facts.get(name) as Promise<T> | undefined;
      if (!f) facts.set(name, (f = read()));
      return f;
    },
  };
}

const change = (value: number | null, previous: number | null): number | null =>
  value === null || previous === null || previous === 0 ? null : round(((value - previous) / Math.abs(previous)) * 100);

export async function kpis(
  em: EntityManager, scope: Scope,
  q: { period: PeriodName; start?: string | undefined; end?: string | undefined; currency?: string | undefined; timezone: string },
  now: Date,
): Promise<KpisView> {
  await assertTimeZone(em, q.timezone);
  const window = resolvePeriod(q, now);
  const previous = previousWindow(window);
  const currency = q.currency ?? (await dominantCurrency(em, scope, window));
  const converter = await Converter.load(em, scope, currency);
  const current = windowContext(em, scope, window, now, converter);
  const before = windowContext(em, scope, previous, now, converter);
  // Every KPI of both windows at once: the memoised facts are read once each, and the queries
  // run side by side on the pool's connections instead of one after another.
  const views = await Promise.all(KPI_NAMES.map(async (name): Promise<KpiView> => {
    const def = KPIS[name];
    if (!def.compute) return { value: null, previous: null, change_percent: null, unit: def.unit, reason: def.unavailable ?? 'not available' };
    const [v, p] = await Promise.all([def.compute(current), def.compute(before)]);
    return { value: v.value, previous: p.value, change_percent: change(v.value, p.value), unit: def.unit, reason: v.value === null ? v.reason : null };
  }));
  const out = Object.fromEntries(KPI_NAMES.map((name, i) => [name, views[i]!])) as Record<KpiName, KpiView>;
  converter.check();
  return {
    object: 'kpis', livemode: scope.livemode, period: q.period, start_date: window.start, end_date: window.end,
    previous_period: { start_date: previous.start, end_date: previous.end },
    timezone: q.timezone, currency, kpis: out, updated_at: now.toISOString(),
  };
}
