import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../platform/errors.ts';
import { assertTimeZone, ordersByDay } from '../analytics/public.ts';
import { divideHalfEven } from '../money.ts';
import type { Scope } from '../scope.ts';

/**
 * The sales summary: orders per local calendar day in an IANA time zone. Days are cut by
 * PostgreSQL (`created_at at time zone $tz`), which knows every DST rule, so a day that is 23 or
 * 25 hours long holds exactly the orders placed on that local date (the v3.2.1 timezone fix).
 * Canceled orders are counted apart and excluded from sales. Amounts are integer minor units per
 * currency; currencies are never added together. The orders are read by the analytics query layer
 * (domain/analytics/public.ts), so this summary and the analytics figures cut days the same way.
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
  await assertTimeZone(em, input.timezone);
  const rows = await ordersByDay(em, scope, { start: input.start_date, end: input.end_date, timezone: input.timezone }, {
    storeIds: input.store_id, currencies: input.currency,
  });
  const byDay = new Map<string, SalesDay>();
  const totals = { orders: 0, units: 0, canceled_orders: 0, gross_sales: {} as Record<string, number>, average_order_value: {} as Record<string, number> };
  const ordersByCurrency: Record<string, number> = {};
  for (const r of rows) {
    let day = byDay.get(r.date);
    if (!day) byDay.set(r.date, (day = { date: r.date, orders: 0, units: 0, canceled_orders: 0, gross_sales: {} }));
    const orders = r.orders;
    day.orders += orders;
    day.units += r.units;
    day.canceled_orders += r.canceled;
    if (r.currency && r.gross !== null) {
      day.gross_sales[r.currency] = (day.gross_sales[r.currency] ?? 0) + r.gross;
      totals.gross_sales[r.currency] = (totals.gross_sales[r.currency] ?? 0) + r.gross;
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
