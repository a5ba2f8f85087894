import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import { convertMinorUnits, divideHalfEven, exponent } from '../money.ts';
import type { Scope } from '../scope.ts';
import type { DateWindow, Granularity } from './periods.ts';

/**
 * The analytics query layer: every figure is a SQL aggregate over the views of migration 0070
 * (never a loop over source rows in JavaScript). Windows are local calendar days in an IANA zone
 * (periods.ts). Amounts come back per currency in integer minor units; `Converter` turns each
 * aggregate (not each row) into the reporting currency at the account's stored exchange rates.
 */

/** SQL: the instants a window of local dates covers, `[lo, hi)`. Parameters: start, tz, end, tz. */
const BOUNDS = `select (?::date)::timestamp at time zone ? as lo, ((?::date) + 1)::timestamp at time zone ? as hi`;
const boundsArgs = (w: DateWindow) => [w.start, w.timezone, w.end, w.timezone];

// ---- Currency conversion ---------------------------------------------------------------------

/** Rounds a decimal string of minor units ("8333.3333") half-even to an integer. */
export function roundMinor(text: string | null | undefined): number {
  if (!text) return 0;
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) throw new RangeError(`not a decimal: ${text}`);
  const fraction = m[3] ?? '';
  const digits = BigInt(`${m[2]}${fraction}`) * (m[1] ? -1n : 1n);
  return Number(divideHalfEven(digits, 10n ** BigInt(fraction.length)));
}

export class MissingRateError extends Error {}

/** Converts aggregates into one currency at the stored rates (direct, or the inverse of a stored rate). */
export class Converter {
  private readonly rates: Map<string, string>;
  readonly target: string;
  /** Currencies that had to be converted and could not be: answered as a 422 by `check`. */
  readonly missing = new Set<string>();

  constructor(target: string, rates: Map<string, string>) {
    this.target = target;
    this.rates = rates;
  }

  static async load(em: EntityManager, scope: Scope, target: string): Promise<Converter> {
    const rows = await em.execute<{ base_currency: string; quote_currency: string; rate: string }[]>(
      'select base_currency, quote_currency, rate::text as rate from analytics_exchange_rates where account_id = ? and livemode = ?',
      [scope.accountId, scope.livemode],
    );
    return new Converter(target, new Map(rows.map((r) => [`${r.base_currency}>${r.quote_currency}`, r.rate])));
  }

  /** `minor` units of `from` in the target currency (minor units), rounded half-even. */
  convert(minor: number, from: string): number {
    if (from === this.target || minor === 0) return minor;
    const direct = this.rates.get(`${from}>${this.target}`);
    if (direct) return convertMinorUnits(minor, from, this.target, direct);
    const inverse = this.rates.get(`${this.target}>${from}`);
    if (inverse) {
      const [whole, fraction = ''] = inverse.split('.');
      const shift = fraction.length + exponent(this.target) - exponent(from);
      const numerator = BigInt(minor) * 10n ** BigInt(Math.max(shift, 0));
      const denominator = BigInt(`${whole}${fraction}`) * 10n ** BigInt(Math.max(-shift, 0));
      return Number(divideHalfEven(numerator, denominator));
    }
    this.missing.add(from);
    return 0;
  }

  /** 422 naming `currency` when an amount could not be converted (no made-up rate). */
  check(path = 'currency'): void {
    if (!this.missing.size) return;
    const list = [...this.missing].sort().join(', ');
    throw new ApiError({
      status: 422, code: 'exchange_rate_missing', title: 'Exchange Rate Missing',
      detail: `Amounts in ${list} cannot be reported in ${this.target}: no exchange rate between them is stored.`,
      suggestion: `Store rates with PUT /v3/catalog/exchange-rates (e.g. base ${[...this.missing][0]}, quote ${this.target}), or ask for currency=${[...this.missing][0]}.`,
      errors: [{ path, message: `no stored exchange rate from ${list} to ${this.target}` }],
      extensions: { missing_rates: [...this.missing].sort().map((c) => `${c}/${this.target}`) },
    });
  }
}

/** The reporting currency when none is asked for: the one with the most revenue in the window, else USD. */
export async function dominantCurrency(em: EntityManager, scope: Scope, w: DateWindow): Promise<string> {
  const rows = await revenueByBucket(em, scope, w, 'month');
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.currency, (totals.get(r.currency) ?? 0) + r.gross);
  const best = [...totals.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
  return best?.[0] ?? 'USD';
}

// ---- Revenue ----------------------------------------------------------------------------------

export interface RevenueAggregate {
  /** First local date of the bucket (clamped to the window's start). */
  bucket: string;
  stream: 'subscriptions' | 'one_time';
  currency: string;
  /** Money received (minor units). */
  gross: number;
  /** Refunded (minor units, negative or 0). */
  refunds: number;
}

/**
 * Entries counted as refunds (`refunds`, ≤ 0): refunds, and reversals of the ledger's refund
 * postings (the only positive reversals). Every other entry, a reversal of a sale included, is
 * money received (`gross`), so a reversed sale does not read as a refund in `refund_rate`.
 */
const IS_REFUND = `(v.source = 'refund' or (v.source = 'reversal' and v.amount > 0))`;

/**
 * Revenue per local bucket, stream and currency. The rollup answers for everything before its
 * watermark (`refreshed_through`); entries after it are read live from the view, so a figure is
 * never stale and never counted twice.
 */
export async function revenueByBucket(em: EntityManager, scope: Scope, w: DateWindow, granularity: Granularity): Promise<RevenueAggregate[]> {
  // The instants first, as constants: a condition on constants reaches into every branch of the
  // entries view (and its indexes); one on another relation's columns would not.
  const [b] = await em.execute<{ lo: string; hi: string; through: string; refreshed_at: string | null }[]>(
    `select ((?::date)::timestamp at time zone ?)::text as lo, (((?::date) + 1)::timestamp at time zone ?)::text as hi,
            coalesce(s.refreshed_through, '-infinity'::timestamptz)::text as through, s.refreshed_at::text as refreshed_at
       from (select 1) one left join analytics_rollup_state s on s.account_id = ? and s.livemode = ?`,
    [...boundsArgs(w), scope.accountId, scope.livemode],
  );
  const { lo, hi, through, refreshed_at: refreshedAt } = b!;
  const [rolled, live] = await Promise.all([
    rolledUp(em, scope, w, granularity, { lo, hi, through, refreshedAt }),
    // A window that ends before the watermark has no live tail: the rollup holds all of it.
    Date.parse(hi) <= Date.parse(through) ? [] : liveTail(em, scope, w, granularity, { lo, hi, through }),
  ]);
  const sums = new Map<string, RevenueAggregate>();
  for (const r of [...rolled, ...live]) {
    const k = `${r.bucket}|${r.stream}|${r.currency}`;
    const s = sums.get(k);
    if (s) {
      s.gross += r.gross;
      s.refunds += r.refunds;
    } else {
      sums.set(k, { ...r });
    }
  }
  return [...sums.values()].sort((a, c) => a.bucket.localeCompare(c.bucket) || a.stream.localeCompare(c.stream) || a.currency.localeCompare(c.currency));
}

type RawAggregate = { bucket: string; stream: RevenueAggregate['stream']; currency: string; gross: string; refunds: string };
const toAggregate = (r: RawAggregate): RevenueAggregate => ({ bucket: r.bucket, stream: r.stream, currency: r.currency, gross: Number(r.gross), refunds: Number(r.refunds) });

/**
 * The rollup's part of a window, per local bucket. It changes only when the rollup is refreshed
 * (`refreshed_at` is in the key), so it is kept in memory: a dashboard asking again (or asking
 * for the previous period) reads no rollup rows until the next refresh.
 */
const rollupCache = new Map<string, RevenueAggregate[]>();
const ROLLUP_CACHE_SIZE = 1000;

async function rolledUp(
  em: EntityManager, scope: Scope, w: DateWindow, granularity: Granularity, b: { lo: string; hi: string; through: string; refreshedAt: string | null },
): Promise<RevenueAggregate[]> {
  if (!b.refreshedAt) return [];
  const key = [scope.accountId, scope.livemode, w.start, w.end, w.timezone, granularity, b.through, b.refreshedAt].join('|');
  const hit = rollupCache.get(key);
  if (hit) return hit;
  const rows = await em.execute<RawAggregate[]>(
    `select to_char(greatest(date_trunc(?, r.bucket at time zone ?)::date, ?::date), 'YYYY-MM-DD') as bucket, r.stream, r.currency,
            sum(r.gross)::text as gross, sum(r.refunds)::text as refunds
       from analytics_revenue_rollup r
      where r.account_id = ? and r.livemode = ? and r.bucket >= ?::timestamptz and r.bucket < least(?::timestamptz, ?::timestamptz)
      group by 1, 2, 3`,
    [granularity, w.timezone, w.start, scope.accountId, scope.livemode, b.lo, b.hi, b.through],
  );
  const out = rows.map(toAggregate);
  rollupCache.set(key, out);
  if (rollupCache.size > ROLLUP_CACHE_SIZE) rollupCache.delete(rollupCache.keys().next().value!);
  return out;
}

/** Entries after the rollup's watermark, read live from the view (at most about 15 minutes of them). */
async function liveTail(em: EntityManager, scope: Scope, w: DateWindow, granularity: Granularity, b: { lo: string; hi: string; through: string }): Promise<RevenueAggregate[]> {
  const rows = await em.execute<RawAggregate[]>(
    `select to_char(greatest(date_trunc(?, v.at at time zone ?)::date, ?::date), 'YYYY-MM-DD') as bucket, v.stream, v.currency,
            coalesce(sum(v.amount) filter (where not ${IS_REFUND}), 0)::text as gross, coalesce(sum(v.amount) filter (where ${IS_REFUND}), 0)::text as refunds
       from analytics_revenue_entries v
      where v.account_id = ? and v.livemode = ? and v.at >= greatest(?::timestamptz, ?::timestamptz) and v.at < ?::timestamptz
      group by 1, 2, 3`,
    [granularity, w.timezone, w.start, scope.accountId, scope.livemode, b.lo, b.through, b.hi],
  );
  return rows.map(toAggregate);
}

/** Recomputes an account's rollup up to the last whole 15 minutes, in one transaction. */
export async function refreshRollup(em: EntityManager, scope: Scope): Promise<{ refreshed_through: string; buckets: number }> {
  return em.transactional(async (tx) => {
    const [state] = await tx.execute<{ through: string }[]>(
      `select to_char(to_timestamp(floor(extract(epoch from now()) / 900) * 900) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as through`);
    await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`analytics-rollup:${scope.accountId}:${scope.livemode}`]);
    await tx.execute('delete from analytics_revenue_rollup where account_id = ? and livemode = ?', [scope.accountId, scope.livemode]);
    // Buckets from `date_part` (float8), not `extract` (numeric): 2–3× cheaper per entry.
    const inserted = await tx.execute<{ n: number }[]>(
      `with ins as (
         insert into analytics_revenue_rollup (account_id, livemode, bucket, stream, currency, gross, refunds, entries)
         select account_id, livemode, to_timestamp(floor(date_part('epoch', at) / 900) * 900), stream, currency,
                coalesce(sum(v.amount) filter (where not (${IS_REFUND})), 0), coalesce(sum(v.amount) filter (where ${IS_REFUND}), 0), count(*)
           from analytics_revenue_entries v
          where account_id = ? and livemode = ? and at < ?::timestamptz
          group by 1, 2, 3, 4, 5
         returning 1)
       select count(*)::int as n from ins`,
      [scope.accountId, scope.livemode, state!.through],
    );
    await tx.execute(
      `insert into analytics_rollup_state (account_id, livemode, refreshed_through, refreshed_at) values (?, ?, ?::timestamptz, now())
       on conflict (account_id, livemode) do update set refreshed_through = excluded.refreshed_through, refreshed_at = excluded.refreshed_at`,
      [scope.accountId, scope.livemode, state!.through],
    );
    return { refreshed_through: state!.through, buckets: inserted[0]?.n ?? 0 };
  });
}

/** Every account and mode that has revenue entries (for the scheduled refresh). */
export async function scopesWithRevenue(em: EntityManager): Promise<Scope[]> {
  const rows = await em.execute<{ account_id: string; livemode: boolean }[]>(
    `select distinct account_id, livemode from (
       select account_id, livemode from invoices where status = 'paid'
       union select account_id, livemode from payments
       union select account_id, livemode from analytics_rollup_state) s`);
  return rows.map((r) => ({ accountId: r.account_id, livemode: r.livemode }));
}

// ---- Recurring revenue ------------------------------------------------------------------------

export interface MrrAggregate {
  currency: string;
  /** Monthly recurring revenue at the window's end (minor units). */
  current: number;
  /** At the window's start. */
  previous: number;
  new: number;
  expansion: number;
  contraction: number;
  churned: number;
  customersBefore: number;
  customersChurned: number;
  customersAfter: number;
  activeSubscriptions: number;
}

/**
 * MRR at the window's start and end and its movements, per currency, classified per customer
 * (Stripe's and Lago's way): new (none before), expansion (more), contraction (less, not none),
 * churned (none after). current = previous + new + expansion − contraction − churned.
 */
export async function mrrMovements(em: EntityManager, scope: Scope, w: DateWindow, now: Date): Promise<MrrAggregate[]> {
  const rows = await em.execute<Record<string, string>[]>(
    `with bounds as (${BOUNDS}),
          t as (select lo as t0, least(hi, ?::timestamptz) as t1 from bounds),
          m as (
            select customer_id, currency,
                   coalesce(sum(monthly_amount) filter (where starts_at <= t0 and (ends_at is null or ends_at > t0)), 0) as before,
                   coalesce(sum(monthly_amount) filter (where starts_at <= t1 and (ends_at is null or ends_at > t1)), 0) as after,
                   count(*) filter (where starts_at <= t1 and (ends_at is null or ends_at > t1)) as active_after
              from analytics_subscription_mrr_segments, t
             where account_id = ? and livemode = ?
             group by customer_id, currency
          )
     select currency,
            sum(after)::text as current, sum(before)::text as previous,
            coalesce(sum(after) filter (where before = 0 and after > 0), 0)::text as new,
            coalesce(sum(after - before) filter (where before > 0 and after > before), 0)::text as expansion,
            coalesce(sum(before - after) filter (where after > 0 and after < before), 0)::text as contraction,
            coalesce(sum(before) filter (where before > 0 and after = 0), 0)::text as churned,
            (count(*) filter (where before > 0))::text as customers_before,
            (count(*) filter (where before > 0 and after = 0))::text as customers_churned,
            (count(*) filter (where after > 0))::text as customers_after,
            sum(active_after)::text as active_subscriptions
       from m group by currency order by currency`,
    [...boundsArgs(w), now.toISOString(), scope.accountId, scope.livemode],
  );
  return rows.map((r) => ({
    currency: r.currency!,
    current: roundMinor(r.current), previous: roundMinor(r.previous), new: roundMinor(r.new),
    expansion: roundMinor(r.expansion), contraction: roundMinor(r.contraction), churned: roundMinor(r.churned),
    customersBefore: Number(r.customers_before), customersChurned: Number(r.customers_churned),
    customersAfter: Number(r.customers_after), activeSubscriptions: Number(r.active_subscriptions),
  }));
}

// ---- Orders -------------------------------------------------------------------------------------

export interface OrdersDay {
  date: string;
  currency: string | null;
  orders: number;
  units: number;
  canceled: number;
  gross: number | null;
}

/**
 * Orders per local day and currency, every day of the window present (empty days with a null
 * currency). Canceled orders are counted apart and left out of sales. The sales summary
 * (commerce, GET /v3/reports/sales-summary) and the order KPIs both read this.
 */
export async function ordersByDay(
  em: EntityManager, scope: Scope, w: DateWindow, filters: { storeIds?: string[] | undefined; currencies?: string[] | undefined } = {},
): Promise<OrdersDay[]> {
  const stores = filters.storeIds ? JSON.stringify(filters.storeIds) : null;
  const currencies = filters.currencies ? JSON.stringify(filters.currencies) : null;
  const rows = await em.execute<{ day: string; currency: string | null; orders: string; units: string; canceled: string; gross: string | null }[]>(
    `with bounds as (${BOUNDS}),
          o as (
            select (o.created_at at time zone ?)::date as day, o.currency, o.status, o.total_amount, o.units
              from analytics_orders o, bounds
             where o.account_id = ? and o.livemode = ? and o.created_at >= bounds.lo and o.created_at < bounds.hi
               and (?::jsonb is null or o.store_id in (select jsonb_array_elements_text(?::jsonb)))
               and (?::jsonb is null or o.currency in (select jsonb_array_elements_text(?::jsonb)))
          )
     select to_char(d.day, 'YYYY-MM-DD') as day, o.currency,
            count(o.day) filter (where o.status <> 'canceled') as orders,
            coalesce(sum(o.units) filter (where o.status <> 'canceled'), 0) as units,
            count(o.day) filter (where o.status = 'canceled') as canceled,
            sum(o.total_amount) filter (where o.status <> 'canceled') as gross
       from generate_series(?::date, ?::date, interval '1 day') as d(day)
       left join o on o.day = d.day::date
      group by d.day, o.currency
      order by d.day, o.currency`,
    [...boundsArgs(w), w.timezone, scope.accountId, scope.livemode, stores, stores, currencies, currencies, w.start, w.end],
  );
  return rows.map((r) => ({
    date: r.day, currency: r.currency, orders: Number(r.orders), units: Number(r.units), canceled: Number(r.canceled),
    gross: r.gross === null ? null : Number(r.gross),
  }));
}

/** Orders fulfilled in the window and their mean time from placement to fulfilment, in seconds. */
export async function fulfilmentTimes(em: EntityManager, scope: Scope, w: DateWindow): Promise<{ fulfilled: number; meanSeconds: number | null }> {
  const [row] = await em.execute<{ n: string; mean: string | null }[]>(
    `with bounds as (${BOUNDS})
     select count(*)::text as n, avg(extract(epoch from (o.fulfilled_at - o.created_at)))::text as mean
       from analytics_orders o, bounds
      where o.account_id = ? and o.livemode = ? and o.fulfilled_at >= bounds.lo and o.fulfilled_at < bounds.hi`,
    [...boundsArgs(w), scope.accountId, scope.livemode],
  );
  return { fulfilled: Number(row?.n ?? 0), meanSeconds: row?.mean == null ? null : Number(row.mean) };
}

/**
 * Net revenue per local day in the reporting currency, from the first day with revenue to the
 * window's end (days without revenue are 0), and how many days had any revenue entry.
 */
export async function dailyRevenueSeries(
  em: EntityManager, scope: Scope, w: DateWindow, converter: Converter,
): Promise<{ dates: string[]; values: number[]; firstDataDate: string | null; daysWithData: number }> {
  const rows = await revenueByBucket(em, scope, w, 'day');
  const byDay = new Map<string, number>();
  for (const r of rows) byDay.set(r.bucket, (byDay.get(r.bucket) ?? 0) + converter.convert(r.gross + r.refunds, r.currency));
  const first = rows[0]?.bucket ?? null;
  const dates: string[] = [];
  const values: number[] = [];
  if (first) {
    for (let d = first; d <= w.end; d = new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)) {
      dates.push(d);
      values.push(byDay.get(d) ?? 0);
    }
  }
  return { dates, values, firstDataDate: first, daysWithData: byDay.size };
}

// ---- Other areas' KPIs (views of migration 0072) ---------------------------------------------------

export interface AreaFacts {
  /** Shipments delivered in the window, and how many by the date promised when their label was bought. */
  delivered: number;
  onTime: number;
  /** Units that left stock for fulfilled orders in the window; units on hand at its start and end. */
  unitsOut: number;
  onHandStart: number;
  onHandEnd: number;
  /** Calls placed in the window that completed, and their mean duration in seconds. */
  callsCompleted: number;
  callMeanSeconds: number | null;
  /** Loyalty points earned (awarded, net of reversals) and redeemed in the window. */
  pointsEarned: number;
  pointsRedeemed: number;
}

/**
 * The facts of the shipping, warehouses, communications and rewards KPIs for one window, in one
 * statement (one round trip and one plan instead of four). On hand at an instant is today's
 * levels less every movement since (`inventory_levels` holds only the present).
 */
export async function areaFacts(em: EntityManager, scope: Scope, w: DateWindow): Promise<AreaFacts> {
  const s = [scope.accountId, scope.livemode];
  const [row] = await em.execute<Record<string, string | null>[]>(
    `with bounds as (${BOUNDS}),
          d as (select count(*) as delivered, count(*) filter (where s.delivered_at <= s.original_estimated_delivery) as on_time
                  from analytics_shipments s, bounds
                 where s.account_id = ? and s.livemode = ? and s.delivered_at >= bounds.lo and s.delivered_at < bounds.hi),
          m as (select m.change, m.reason, m.created_at from analytics_stock_movements m, bounds
                 where m.account_id = ? and m.livemode = ? and m.created_at >= bounds.lo),
          st as (select coalesce(-sum(m.change) filter (where m.reason = 'order_fulfillment' and m.change < 0 and m.created_at < bounds.hi), 0) as out,
                        coalesce(sum(m.change), 0) as since_lo, coalesce(sum(m.change) filter (where m.created_at >= bounds.hi), 0) as since_hi
                   from m, bounds),
          c as (select count(*) as completed, avg(c.duration) as mean
                  from analytics_calls c, bounds
                 where c.account_id = ? and c.livemode = ? and c.created_at >= bounds.lo and c.created_at < bounds.hi and c.status = 'completed'),
          p as (select coalesce(sum(p.points) filter (where p.kind = 'earned'), 0) as earned,
                       coalesce(sum(p.points) filter (where p.kind = 'redeemed'), 0) as redeemed
                  from analytics_points p, bounds
                 where p.account_id = ? and p.livemode = ? and p.at >= bounds.lo and p.at < bounds.hi)
     select d.delivered::text as delivered, d.on_time::text as on_time, st.out::text as out, st.since_lo::text as since_lo, st.since_hi::text as since_hi,
            (select coalesce(sum(i.quantity), 0) from analytics_inventory i where i.account_id = ? and i.livemode = ?)::text as on_hand_now,
            c.completed::text as completed, c.mean::text as mean, p.earned::text as earned, p.redeemed::text as redeemed
       from d, st, c, p`,
    [...boundsArgs(w), ...s, ...s, ...s, ...s, ...s],
  );
  const n = (k: string) => Number(row?.[k] ?? 0);
  const now = n('on_hand_now');
  return {
    delivered: n('delivered'), onTime: n('on_time'),
    unitsOut: n('out'), onHandStart: now - n('since_lo'), onHandEnd: now - n('since_hi'),
    callsCompleted: n('completed'), callMeanSeconds: row?.mean == null ? null : Number(row.mean),
    pointsEarned: n('earned'), pointsRedeemed: n('redeemed'),
  };
}
