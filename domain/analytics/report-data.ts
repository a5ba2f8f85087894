import type { Pool } from 'pg';
import { exponent } from '../money.ts';
import type { Scope } from '../scope.ts';
import type { ReportFilters, ReportType } from './schemas.ts';

/**
 * What each report type holds: its columns, its rows (read through a server-side cursor,
 * `PAGE_ROWS` at a time, so a report of any size streams with bounded memory), its totals and
 * the daily series of its chart. Everything is read through the analytics views.
 */

export type ColumnType = 'string' | 'date' | 'timestamp' | 'integer' | 'money';

export interface Column {
  key: string;
  header: string;
  type: ColumnType;
  /** PDF column width in points. */
  width: number;
}

/** One report row: values keyed by column; a money value is minor units, with its currency in `currency`. */
export type Row = Record<string, string | number | null>;

export interface ReportParams {
  scope: Scope;
  reportType: ReportType;
  start: string;
  end: string;
  timezone: string;
  filters: ReportFilters;
}

export interface Totals {
  /** Label → value (counts) or per-currency minor units. */
  lines: { label: string; value: number; currency: string | null }[];
}

interface Source {
  title: string;
  section: string;
  columns: Column[];
  /** select list + from + where; `$1` account, `$2` livemode, `$3` start, `$4` end, `$5` tz, `$6` filters json. */
  from: string;
  /** The ordering expressions (unique together): a report's rows always come in the same order. */
  order: [string, string];
  totals: string;
  chart: string | null;
}

const BOUNDS = `(($3::date)::timestamp at time zone $5)`;
const BOUNDS_END = `((($4::date) + 1)::timestamp at time zone $5)`;

const SOURCES: Record<ReportType, Source> = {
  financial: {
    title: 'Financial report',
    section: 'Transactions',
    columns: [
      { key: 'date', header: 'Date', type: 'date', width: 62 },
      { key: 'kind', header: 'Kind', type: 'string', width: 50 },
      { key: 'id', header: 'Id', type: 'string', width: 150 },
      { key: 'stream', header: 'Stream', type: 'string', width: 70 },
      { key: 'customer_id', header: 'Customer', type: 'string', width: 100 },
      { key: 'currency', header: 'Currency', type: 'string', width: 45 },
      { key: 'amount', header: 'Amount', type: 'money', width: 60 },
    ],
    from: `select to_char(e.at at time zone $5, 'YYYY-MM-DD') as date, e.source as kind, e.source_id as id, e.stream,
                  e.customer_id, e.currency, e.amount, e.at::text as k1, e.source_id as k2
             from analytics_revenue_entries e
            where e.account_id = $1 and e.livemode = $2 and e.at >= ${BOUNDS} and e.at < ${BOUNDS_END}
              and ($6::jsonb->>'customer_id' is null or e.customer_id = $6::jsonb->>'customer_id')`,
    order: ['e.at', 'e.source_id'],
    totals: `select 'Net revenue' as label, sum(amount)::bigint as value, currency from (FROM) t group by currency
             union all select 'Refunds', sum(least(amount, 0))::bigint, currency from (FROM) t group by currency
             union all select 'Transactions', count(*), null from (FROM) t`,
    chart: `select date, sum(amount)::bigint as value from (FROM) t group by date order by date`,
  },
  sales: {
    title: 'Sales report',
    section: 'Orders',
    columns: [
      { key: 'date', header: 'Date', type: 'date', width: 62 },
      { key: 'id', header: 'Order', type: 'string', width: 150 },
      { key: 'store_id', header: 'Store', type: 'string', width: 100 },
      { key: 'customer_id', header: 'Customer', type: 'string', width: 100 },
      { key: 'status', header: 'Status', type: 'string', width: 55 },
      { key: 'units', header: 'Units', type: 'integer', width: 35 },
      { key: 'currency', header: 'Currency', type: 'string', width: 45 },
      { key: 'total', header: 'Total', type: 'money', width: 60 },
    ],
    from: `select to_char(o.created_at at time zone $5, 'YYYY-MM-DD') as date, o.id, o.store_id, o.customer_id, o.status, o.units,
                  o.currency, o.total_amount as total, o.created_at::text as k1, o.id as k2
             from analytics_orders o
            where o.account_id = $1 and o.livemode = $2 and o.created_at >= ${BOUNDS} and o.created_at < ${BOUNDS_END}
              and ($6::jsonb->'store_id' is null or o.store_id in (select jsonb_array_elements_text($6::jsonb->'store_id')))
              and ($6::jsonb->>'customer_id' is null or o.customer_id = $6::jsonb->>'customer_id')`,
    order: ['o.created_at', 'o.id'],
    totals: `select 'Gross sales' as label, (sum(total) filter (where status <> 'canceled'))::bigint as value, currency from (FROM) t group by currency
             union all select 'Orders', count(*) filter (where status <> 'canceled'), null from (FROM) t
             union all select 'Canceled orders', count(*) filter (where status = 'canceled'), null from (FROM) t
             union all select 'Units', coalesce(sum(units) filter (where status <> 'canceled'), 0), null from (FROM) t`,
    chart: `select date, (sum(total) filter (where status <> 'canceled'))::bigint as value from (FROM) t group by date order by date`,
  },
  customer: {
    title: 'Customer report',
    section: 'Customers',
    columns: [
      { key: 'id', header: 'Customer', type: 'string', width: 150 },
      { key: 'name', header: 'Name', type: 'string', width: 110 },
      { key: 'email', header: 'Email', type: 'string', width: 120 },
      { key: 'created_at', header: 'Created', type: 'timestamp', width: 62 },
      { key: 'currency', header: 'Currency', type: 'string', width: 45 },
      { key: 'revenue', header: 'Revenue', type: 'money', width: 60 },
    ],
    from: `select c.id, c.name, c.email, c.created_at, r.currency, coalesce(r.revenue, 0) as revenue,
                  c.id as k1, coalesce(r.currency, '') as k2
             from analytics_customers c
             left join lateral (
               select e.currency, sum(e.amount) as revenue from analytics_revenue_entries e
                where e.account_id = $1 and e.livemode = $2 and e.customer_id = c.id and e.at >= ${BOUNDS} and e.at < ${BOUNDS_END}
                group by e.currency) r on true
            where c.account_id = $1 and c.livemode = $2 and c.created_at < ${BOUNDS_END}
              and ($6::jsonb->>'customer_id' is null or c.id = $6::jsonb->>'customer_id')`,
    order: ['c.id', "coalesce(r.currency, '')"],
    totals: `select 'Customers' as label, count(distinct id) as value, null as currency from (FROM) t
             union all select 'Revenue', sum(revenue)::bigint, currency from (FROM) t where currency is not null group by currency`,
    chart: null,
  },
  inventory: {
    title: 'Inventory report',
    section: 'Stock levels',
    columns: [
      { key: 'warehouse_id', header: 'Warehouse', type: 'string', width: 110 },
      { key: 'warehouse_name', header: 'Warehouse name', type: 'string', width: 100 },
      { key: 'sku', header: 'SKU', type: 'string', width: 90 },
      { key: 'quantity', header: 'On hand', type: 'integer', width: 50 },
      { key: 'reserved', header: 'Reserved', type: 'integer', width: 50 },
      { key: 'available', header: 'Available', type: 'integer', width: 50 },
      { key: 'reorder_point', header: 'Reorder at', type: 'integer', width: 55 },
    ],
    from: `select i.warehouse_id, i.warehouse_name, i.sku, i.quantity, i.reserved, i.available, i.reorder_point,
                  i.warehouse_id as k1, i.sku as k2
             from analytics_inventory i
            where i.account_id = $1 and i.livemode = $2 and $3::date <= $4::date and $5::text is not null
              and ($6::jsonb->'warehouse_id' is null or i.warehouse_id in (select jsonb_array_elements_text($6::jsonb->'warehouse_id')))`,
    order: ['i.warehouse_id', 'i.sku'],
    totals: `select 'SKUs' as label, count(*) as value, null as currency from (FROM) t
             union all select 'Units on hand', coalesce(sum(quantity), 0), null from (FROM) t
             union all select 'Below reorder point', count(*) filter (where available <= reorder_point), null from (FROM) t`,
    chart: null,
  },
};

export const PAGE_ROWS = 1000;

export function reportSource(type: ReportType): { title: string; section: string; columns: Column[] } {
  const s = SOURCES[type];
  return { title: s.title, section: s.section, columns: s.columns };
}

function args(p: ReportParams): unknown[] {
  return [p.scope.accountId, p.scope.livemode, p.start, p.end, p.timezone, JSON.stringify(p.filters)];
}

export async function countRows(pool: Pool, p: ReportParams): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`select count(*)::text as n from (${SOURCES[p.reportType].from}) t`, args(p));
  return Number(rows[0]!.n);
}

export async function reportTotals(pool: Pool, p: ReportParams): Promise<Totals> {
  const s = SOURCES[p.reportType];
  const { rows } = await pool.query<{ label: string; value: string | null; currency: string | null }>(s.totals.replaceAll('(FROM)', `(${s.from})`), args(p));
  return { lines: rows.filter((r) => r.value !== null).map((r) => ({ label: r.label, value: Number(r.value), currency: r.currency })) };
}

/** The chart's series (net amount per local day, per report); null for reports without one. */
export async function reportChart(pool: Pool, p: ReportParams): Promise<{ date: string; value: number }[] | null> {
  const s = SOURCES[p.reportType];
  if (!s.chart) return null;
  const { rows } = await pool.query<{ date: string; value: string | null }>(s.chart.replaceAll('(FROM)', `(${s.from})`), args(p));
  return rows.map((r) => ({ date: r.date, value: Number(r.value ?? 0) }));
}

/**
 * Every row, through a server-side cursor (`DECLARE … CURSOR` in a read-only transaction on a
 * connection of its own, `FETCH 1000` at a time), as an async iterable: memory holds one page.
 */
export async function* reportRows(pool: Pool, p: ReportParams): AsyncGenerator<Row> {
  const s = SOURCES[p.reportType];
  const client = await pool.connect();
  let committed = false;
  try {
    await client.query('begin read only');
    await client.query(`declare report_rows no scroll cursor for ${s.from} order by ${s.order[0]}, ${s.order[1]}`, args(p));
    for (;;) {
      const { rows }: { rows: (Row & { k1: unknown; k2: unknown })[] } = await client.query(`fetch ${PAGE_ROWS} from report_rows`);
      for (const r of rows) {
        const { k1: _k1, k2: _k2, ...rest } = r;
        yield rest;
      }
      if (rows.length < PAGE_ROWS) break;
    }
    await client.query('commit');
    committed = true;
  } finally {
    // A consumer that stopped early or an error: end the transaction before the connection goes back.
    if (!committed) await client.query('rollback').catch(() => undefined);
    client.release();
  }
}

/** A money cell's decimal major-unit value (exact for every amount below 2^53 minor units). */
export function majorValue(minor: number, currency: string | null): number {
  const e = currency ? exponent(currency) : 2;
  return Number((minor / 10 ** e).toFixed(e));
}
