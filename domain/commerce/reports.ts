import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../platform/errors.ts';
import { divideHalfEven } from '../money.ts';
import type { Scope } from '../scope.ts';

/**
 * The sales summary: orders per local calendar day in an IANA time zone. Days are cut by
 * PostgreSQL (`created_at at time zone $tz`), which knows every DST rule, so a day that is 23 or
 * 25 hours long holds exactly the orders placed on that local date (the v3.2.1 timezone fix).
 * Canceled orders are counted apart and excluded from sales. Amounts are integer minor units per
 * currency; currencies are never added together.
 */

export const MAX_SUMMARY_DAYS = 366;

export interface SalesDay {
  date: string;
  orders: number;
  units: number;
  canceled_orders: number;
  gross_sales: Record<string, number>;
}

export interface SalesSummary {
  object: 'sales_summary';
  livemode: boolean;
  timezone: string;
  start_date: string;
  end_date: string;
  store_id: string[] | null;
  currency: string[] | null;
  totals: {
    orders: number;
    units: number;
    canceled_orders: number;
    gross_sales: Record<string, number>;
    /** Gross sales divided by orders in that currency, rounded half-even to whole minor units. */
    average_order_value: Record<string, number>;
  };
  days: SalesDay[];
}

export interface SalesSummaryInput {
  start_date: string;
  end_date: string;
  timezone: string;
  store_id?: string[];
  currency?: string[];
}

export async function salesSummary(em: EntityManager, scope: Scope, input: SalesSummaryInput): Promise<SalesSummary> {
  const days = (Date.parse(`${input.end_date}T00:00:00Z`) - Date.parse(`${input.start_date}T00:00:00Z`)) / 86_400_000 + 1;
  if (days < 1) throw validationFailed([{ path: 'end_date', message: 'end_date must not be before start_date' }]);
  if (days > MAX_SUMMARY_DAYS) throw validationFailed([{ path: 'end_date', message: `a summary spans at most ${MAX_SUMMARY_DAYS} days` }]);
  const zone = await em.execute<{ ok: boolean }[]>('select exists (select 1 from pg_timezone_names where name = ?) as ok', [input.timezone]);
  if (!zone[0]?.ok) throw validationFailed([{ path: 'timezone', message: `unknown IANA time zone '${input.timezone}'; use a name such as Europe/Berlin or America/New_York` }]);

  const rows = await em.execute<{ day: string; currency: string | null; orders: string; units: string; canceled: string; gross: string | null }[]>(
    `with o as (
       select (created_at at time zone ?)::date as day, currency, status, total_amount,
              (select coalesce(sum((li->>'quantity')::int), 0) from jsonb_array_elements(line_items) li) as units
         from orders
        where account_id = ? and livemode = ?
          and created_at >= (?::date)::timestamp at time zone ?
          and created_at < ((?::date) + 1)::timestamp at time zone ?
          and (?::jsonb is null or store_id in (select jsonb_array_elements_text(?::jsonb)))
          and (?::jsonb is null or currency in (select jsonb_array_elements_text(?::jsonb)))
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
    [
      input.timezone, scope.accountId, scope.livemode,
      input.start_date, input.timezone, input.end_date, input.timezone,
      input.store_id ? JSON.stringify(input.store_id) : null, input.store_id ? JSON.stringify(input.store_id) : null,
      input.currency ? JSON.stringify(input.currency) : null, input.currency ? JSON.stringify(input.currency) : null,
      input.start_date, input.end_date,
    ],
  );

  const byDay = new Map<string, SalesDay>();
  const totals = { orders: 0, units: 0, canceled_orders: 0, gross_sales: {} as Record<string, number>, average_order_value: {} as Record<string, number> };
  const ordersByCurrency: Record<string, number> = {};
  for (const r of rows) {
    let day = byDay.get(r.day);
    if (!day) byDay.set(r.day, (day = { date: r.day, orders: 0, units: 0, canceled_orders: 0, gross_sales: {} }));
    const orders = Number(r.orders);
    day.orders += orders;
    day.units += Number(r.units);
    day.canceled_orders += Number(r.canceled);
    if (r.currency && r.gross !== null) {
      day.gross_sales[r.currency] = (day.gross_sales[r.currency] ?? 0) + Number(r.gross);
      totals.gross_sales[r.currency] = (totals.gross_sales[r.currency] ?? 0) + Number(r.gross);
      ordersByCurrency[r.currency] = (ordersByCurrency[r.currency] ?? 0) + orders;
    }
  }
  for (const day of byDay.values()) {
    totals.orders += day.orders;
    totals.units += day.units;
    totals.canceled_orders += day.canceled_orders;
  }
  for (const [c, gross] of Object.entries(totals.gross_sales)) {
    if (ordersByCurrency[c]) totals.average_order_value[c] = Number(divideHalfEven(BigInt(gross), BigInt(ordersByCurrency[c]!)));
  }
  return {
    object: 'sales_summary', livemode: scope.livemode, timezone: input.timezone,
    start_date: input.start_date, end_date: input.end_date,
    store_id: input.store_id ?? null, currency: input.currency ?? null,
    totals, days: [...byDay.values()],
  };
}
