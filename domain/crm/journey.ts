import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { paidInvoiceTotals } from '../billing/public.ts';
import { Interaction, Touchpoint } from './entities.ts';
import { toMajorNumber } from '../money.ts';
import { SCOPE_FILTER, type Scope } from '../scope.ts';
import { Order, loadRates, priceIn } from '../commerce/public.ts';
import { Customer } from '../customers/public.ts';

/**
 * The customer journey: what a customer did and was told, their lifetime value, how engaged they
 * are and where they stand, from a fixed list of sources, each contributing touchpoints and/or
 * revenue: `touchpointSources` (commerce orders, CRM interactions and recorded visits, payments)
 * and `revenueSources` (paid orders, and billing's paid invoices read through
 * `domain/billing/public.ts`). A new source is one more entry in those lists.
 *
 * The numbers are aggregated in SQL (every event about a customer carries them, so they must stay
 * cheap for a customer with thousands of orders); only the touchpoints shown are read as rows.
 *
 * Rules (also in docs/crm.md):
 *
 * total_ltv — the sum of paid orders (payment_status = paid, not canceled: a canceled order's
 *   payment is refunded) and of every registered revenue source (paid invoices), in the journey's
 *   currency, as a decimal major-unit number. Amounts in other currencies are converted with the
 *   account's exchange rates (half-even to the currency's exponent); amounts with no rate are left
 *   out and listed in `unconverted`. The currency is the `currency` asked for, else the currency of
 *   the most recent revenue, else USD.
 *
 * engagement_score — Σ weight × 0.5^(age in days / 30) over every touchpoint, rounded to one
 *   decimal and capped at 100. Weights: purchase 20; meeting 12; call 8; payment 5; chat 5;
 *   email 4; support_ticket 4; website_visit 2; anything else 1; a canceled order 0. Inbound
 *   interactions (the customer reached out) weigh 1.5×. Future timestamps count as age 0.
 *
 * lifecycle_stage — the first rule that matches:
 *   churned     paid before, but no touchpoint or payment of any kind in the last 180 days;
 *   loyal       3 or more paid orders/invoices in the last 365 days;
 *   customer    at least one paid order/invoice;
 *   opportunity an unpaid order that is not canceled, or a meeting in the last 90 days;
 *   lead        any touchpoint at all;
 *   subscriber  nothing recorded yet.
 */

export interface JourneyTouchpoint {
  timestamp: string;
  type: string;
  source: string | null;
  /** Decimal major units of `currency`, for touchpoints that carry money. */
  amount?: number;
  currency?: string;
  direction?: 'inbound' | 'outbound';
  /** The record behind it (ord_…, int_…, tp_…, pay_…). */
  ref: string;
}

/** What the lifecycle rules look for besides counts and dates. */
export type JourneySignal = 'open_order' | 'recent_meeting';

/** One source's contribution to the numbers, aggregated by the source (in SQL). */
export interface SourceSummary {
  count: number;
  /** Σ weight × decay over the source's touchpoints (see `WEIGHTS`, `HALF_LIFE_DAYS`). */
  engagement: number;
  firstSeenMs: number | null;
  lastSeenMs: number | null;
  /** Touchpoints that count as purchases / as CRM interactions, for the summary. */
  purchases: number;
  interactions: number;
  signals: JourneySignal[];
}

export interface TouchpointSource {
  name: string;
  /** The summaries of many customers at once (one statement); a customer with nothing here is missing from the map. */
  summarize(em: EntityManager, scope: Scope, customerIds: readonly string[], now: Date): Promise<Map<string, SourceSummary>>;
  /** The `limit` most recent touchpoints. */
  list(em: EntityManager, scope: Scope, customerId: string, limit: number): Promise<JourneyTouchpoint[]>;
}

/** Money a customer paid in one currency, counted toward the lifetime value. */
export interface RevenueTotal {
  currency: string;
  /** Minor units of `currency`. */
  amount: number;
  count: number;
  countLastYear: number;
  lastAtMs: number | null;
}

export interface RevenueSource {
  name: string;
  /** The totals of many customers at once (one statement); a customer with nothing here is missing from the map. */
  totals(em: EntityManager, scope: Scope, customerIds: readonly string[], now: Date): Promise<Map<string, RevenueTotal[]>>;
}

export const WEIGHTS: Readonly<Record<string, number>> = {
  purchase: 20, meeting: 12, call: 8, payment: 5, chat: 5, email: 4, support_ticket: 4, website_visit: 2, order_canceled: 0,
};
const DEFAULT_WEIGHT = 1;
const INBOUND_FACTOR = 1.5;
const HALF_LIFE_DAYS = 30;
const DAY_MS = 86_400_000;

/** The weight of a touchpoint type as SQL (`case … end`), from the same table as `engagementScore`. */
function weightSql(typeColumn: string): string {
  const arms = Object.entries(WEIGHTS).map(([t, w]) => `when '${t.replace(/'/g, "''")}' then ${w}`).join(' ');
  return `(case ${typeColumn} ${arms} else ${DEFAULT_WEIGHT} end)`;
}

/**
 * SQL for the decay factor of a timestamp column at `now` (bound as the first `?` it contains), in
 * float8 throughout: `extract(epoch …)` is numeric, and numeric `power()` over every row made this
 * the costliest part of an event's dispatch (57–61 ms against 3–4 ms for 10,000 orders).
 */
const decaySql = (column: string) =>
  `power(0.5::float8, greatest(0::float8, date_part('epoch', ?::timestamptz - ${column})) / ${(DAY_MS / 1000) * HALF_LIFE_DAYS})`;
const epochMs = (expr: string) => `(extract(epoch from ${expr}) * 1000)::float8`;

interface SummaryRow { customer_id: string; n: number; engagement: number | null; first_ms: number | null; last_ms: number | null; purchases?: number; flag?: boolean }

/** Rows keyed by their `customer_id`, each turned into a summary. */
function byCustomer<R extends { customer_id: string }, T>(rows: R[], of: (row: R) => T): Map<string, T> {
  return new Map(rows.map((row) => [row.customer_id, of(row)]));
}

function summaryOf(row: SummaryRow | undefined, extra: Partial<SourceSummary> = {}): SourceSummary {
  return {
    count: Number(row?.n ?? 0), engagement: Number(row?.engagement ?? 0),
    firstSeenMs: row?.first_ms === null || row?.first_ms === undefined ? null : Number(row.first_ms),
    lastSeenMs: row?.last_ms === null || row?.last_ms === undefined ? null : Number(row.last_ms),
    purchases: 0, interactions: 0, signals: [], ...extra,
  };
}

const orderSource: TouchpointSource = {
  name: 'orders',
  async summarize(em, scope, customerIds, now) {
    const rows = await em.execute<SummaryRow[]>(
      `select customer_id, count(*)::int as n,
              sum(case when status = 'canceled' then ${WEIGHTS.order_canceled} else ${WEIGHTS.purchase} end * ${decaySql('created_at')})::float8 as engagement,
              ${epochMs('min(created_at)')} as first_ms, ${epochMs('max(created_at)')} as last_ms,
              (count(*) filter (where status <> 'canceled'))::int as purchases,
              coalesce(bool_or(status <> 'canceled' and payment_status = 'unpaid'), false) as flag
         from orders where account_id = ? and livemode = ? and customer_id in (?) group by customer_id`,
      [now.toISOString(), scope.accountId, scope.livemode, customerIds],
    );
    return byCustomer(rows, (row) => summaryOf(row, { purchases: Number(row.purchases ?? 0), signals: row.flag ? ['open_order'] : [] }));
  },
  async list(em, _scope, customerId, limit) {
    const orders = await em.find(Order, { customerId }, { orderBy: { id: 'desc' }, limit });
    return orders.map((o) => ({
      timestamp: o.createdAt.toISOString(), type: o.status === 'canceled' ? 'order_canceled' : 'purchase', source: o.storeId,
      amount: toMajorNumber(o.totalAmount, o.currency), currency: o.currency, ref: o.id,
    }));
  },
};

const interactionSource: TouchpointSource = {
  name: 'interactions',
  async summarize(em, scope, customerIds, now) {
    const rows = await em.execute<SummaryRow[]>(
      `select customer_id, count(*)::int as n,
              sum(${weightSql('type')} * (case direction when 'inbound' then ${INBOUND_FACTOR} else 1 end) * ${decaySql('occurred_at')})::float8 as engagement,
              ${epochMs('min(occurred_at)')} as first_ms, ${epochMs('max(occurred_at)')} as last_ms,
              coalesce(bool_or(type = 'meeting' and occurred_at >= ?::timestamptz - interval '90 days'), false) as flag
         from customer_interactions where account_id = ? and livemode = ? and customer_id in (?) group by customer_id`,
      [now.toISOString(), now.toISOString(), scope.accountId, scope.livemode, customerIds],
    );
    return byCustomer(rows, (row) => summaryOf(row, { interactions: Number(row.n ?? 0), signals: row.flag ? ['recent_meeting'] : [] }));
  },
  async list(em, _scope, customerId, limit) {
    const rows = await em.find(Interaction, { customerId }, { orderBy: { occurredAt: 'desc', id: 'desc' }, limit });
    return rows.map((i) => ({ timestamp: i.occurredAt.toISOString(), type: i.type, source: 'crm', direction: i.direction, ref: i.id }));
  },
};

const recordedSource: TouchpointSource = {
  name: 'touchpoints',
  async summarize(em, scope, customerIds, now) {
    const rows = await em.execute<SummaryRow[]>(
      `select customer_id, count(*)::int as n, sum(${weightSql('type')} * ${decaySql('occurred_at')})::float8 as engagement,
              ${epochMs('min(occurred_at)')} as first_ms, ${epochMs('max(occurred_at)')} as last_ms
         from customer_touchpoints where account_id = ? and livemode = ? and customer_id in (?) group by customer_id`,
      [now.toISOString(), scope.accountId, scope.livemode, customerIds],
    );
    return byCustomer(rows, (row) => summaryOf(row));
  },
  async list(em, _scope, customerId, limit) {
    const rows = await em.find(Touchpoint, { customerId }, { orderBy: { occurredAt: 'desc', id: 'desc' }, limit });
    return rows.map((t) => ({ timestamp: t.occurredAt.toISOString(), type: t.type, source: t.source ?? null, ref: t.id }));
  },
};

/** Payments (payments area) as touchpoints; their money reaches the LTV through the paid orders and invoices. */
const PAID = `status in ('succeeded', 'partially_refunded', 'refunded')`;
async function paymentsExist(em: EntityManager): Promise<boolean> {
  const [row] = await em.execute<{ ok: boolean }[]>("select to_regclass('payments') is not null as ok");
  return Boolean(row?.ok);
}
const paymentSource: TouchpointSource = {
  name: 'payments',
  async summarize(em, scope, customerIds, now) {
    if (!(await paymentsExist(em))) return new Map();
    const rows = await em.execute<SummaryRow[]>(
      `select customer_id, count(*)::int as n, sum(${WEIGHTS.payment} * ${decaySql('created_at')})::float8 as engagement,
              ${epochMs('min(created_at)')} as first_ms, ${epochMs('max(created_at)')} as last_ms
         from payments where account_id = ? and livemode = ? and customer_id in (?) and ${PAID} group by customer_id`,
      [now.toISOString(), scope.accountId, scope.livemode, customerIds],
    );
    return byCustomer(rows, (row) => summaryOf(row));
  },
  async list(em, scope, customerId, limit) {
    if (!(await paymentsExist(em))) return [];
    const rows = await em.execute<{ id: string; amount: string; currency: string; gateway: string; at: string }[]>(
      `select id, amount::text as amount, currency, gateway, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
         from payments where account_id = ? and livemode = ? and customer_id = ? and ${PAID}
        order by id desc limit ?`,
      [scope.accountId, scope.livemode, customerId, limit],
    );
    return rows.map((p) => {
      const currency = p.currency.toUpperCase();
      return { timestamp: p.at, type: 'payment', source: p.gateway, amount: toMajorNumber(BigInt(p.amount), currency), currency, ref: p.id };
    });
  },
};

const paidOrders: RevenueSource = {
  name: 'paid_orders',
  async totals(em, scope, customerIds, now) {
    const rows = await em.execute<{ customer_id: string; currency: string; amount: string; n: number; n_year: number; last_ms: number }[]>(
      `select customer_id, currency, sum(total_amount)::text as amount, count(*)::int as n,
              (count(*) filter (where coalesce(paid_at, created_at) >= ?::timestamptz - interval '365 days'))::int as n_year,
              ${epochMs('max(coalesce(paid_at, created_at))')} as last_ms
         from orders where account_id = ? and livemode = ? and customer_id in (?) and payment_status = 'paid' and status <> 'canceled'
        group by customer_id, currency`,
      [now.toISOString(), scope.accountId, scope.livemode, customerIds],
    );
    return totalsByCustomer(rows);
  },
};

/** Revenue rows (`customer_id`, `currency`, `amount`, `n`, `n_year`, `last_ms`) grouped by customer. */
function totalsByCustomer(rows: { customer_id: string; currency: string; amount: string; n: number; n_year: number; last_ms: number }[]): Map<string, RevenueTotal[]> {
  const totals = new Map<string, RevenueTotal[]>();
  for (const r of rows) {
    let list = totals.get(r.customer_id);
    if (!list) totals.set(r.customer_id, (list = []));
    list.push({ currency: r.currency, amount: Number(r.amount), count: r.n, countLastYear: r.n_year, lastAtMs: Number(r.last_ms) });
  }
  return totals;
}

/** Where touchpoints come from; a new source is one more entry here. */
export const touchpointSources: TouchpointSource[] = [orderSource, interactionSource, recordedSource, paymentSource];
const paidInvoices: RevenueSource = {
  name: 'paid_invoices',
  totals: async (em, scope, customerIds, now) => totalsByCustomer(await paidInvoiceTotals(em, scope, customerIds, now)),
};

/** What counts toward the lifetime value: paid orders and billing's paid invoices. */
export const revenueSources: RevenueSource[] = [paidOrders, paidInvoices];

export const LIFECYCLE_STAGES = ['subscriber', 'lead', 'opportunity', 'customer', 'loyal', 'churned'] as const;
export type LifecycleStage = (typeof LIFECYCLE_STAGES)[number];

/** The score of individual touchpoints (the same rule the sources apply in SQL). */
export function engagementScore(touchpoints: JourneyTouchpoint[], now: Date): number {
  let sum = 0;
  for (const t of touchpoints) {
    const weight = (WEIGHTS[t.type] ?? DEFAULT_WEIGHT) * (t.direction === 'inbound' ? INBOUND_FACTOR : 1);
    const ageDays = Math.max(0, (now.getTime() - Date.parse(t.timestamp)) / DAY_MS);
    sum += weight * 0.5 ** (ageDays / HALF_LIFE_DAYS);
  }
  return roundScore(sum);
}

function roundScore(sum: number): number {
  return Math.min(100, Math.round(sum * 10) / 10);
}

export interface LifecycleFacts {
  touchpoints: number;
  lastSeenMs: number | null;
  paid: number;
  paidLastYear: number;
  signals: readonly JourneySignal[];
}

export function lifecycleStage(facts: LifecycleFacts, now: Date): LifecycleStage {
  if (facts.paid > 0 && (facts.lastSeenMs === null || facts.lastSeenMs < now.getTime() - 180 * DAY_MS)) return 'churned';
  if (facts.paidLastYear >= 3) return 'loyal';
  if (facts.paid > 0) return 'customer';
  if (facts.signals.includes('open_order') || facts.signals.includes('recent_meeting')) return 'opportunity';
  if (facts.touchpoints > 0) return 'lead';
  return 'subscriber';
}

export interface CustomerJourney {
  object: 'customer_journey';
  livemode: boolean;
  customer_id: string;
  lifecycle_stage: LifecycleStage;
  total_ltv: number;
  currency: string;
  engagement_score: number;
  touchpoints: JourneyTouchpoint[];
  summary: {
    touchpoints: number;
    purchases: number;
    paid_orders_and_invoices: number;
    interactions: number;
    first_seen_at: string | null;
    last_seen_at: string | null;
  };
  unconverted: { currency: string; amount: number }[];
  computed_at: string;
}

export function scopeOfEm(em: EntityManager): Scope {
  const params = em.getFilterParams<{ accountId?: string; livemode?: boolean }>(SCOPE_FILTER);
  if (!params?.accountId || typeof params.livemode !== 'boolean') throw new Error('journey needs an EntityManager scoped to an account and mode');
  return { accountId: params.accountId, livemode: params.livemode };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The numbers of a journey (everything but the touchpoints), as `customerNumbers` computes them. */
export type JourneyNumbers = Pick<CustomerJourney, 'lifecycle_stage' | 'total_ltv' | 'currency' | 'engagement_score' | 'summary' | 'unconverted'>;

/**
 * The journey numbers of many customers of the em's scope at once: one statement per source for
 * all of them (the outbox dispatcher computes `customer_metrics` for a whole pass this way).
 * Customers not in the scope are missing from the answer.
 */
export async function customerNumbers(
  em: EntityManager, customerIds: readonly string[], opts: { currency?: string; now?: Date } = {},
): Promise<Map<string, JourneyNumbers>> {
  const scope = scopeOfEm(em);
  const ids = [...new Set(customerIds)];
  if (!ids.length) return new Map();
  const existing = (await em.find(Customer, { id: { $in: ids } }, { fields: ['id'] })).map((c) => c.id);
  if (!existing.length) return new Map();
  const now = opts.now ?? new Date();

  const [summaries, revenues] = await Promise.all([
    Promise.all(touchpointSources.map((s) => s.summarize(em.fork(), scope, existing, now))),
    Promise.all(revenueSources.map((s) => s.totals(em.fork(), scope, existing, now))),
  ]);
  const customers = existing.map((id) => {
    const revenue = revenues.flatMap((byId) => byId.get(id) ?? []);
    const latest = [...revenue].sort((a, b) => (b.lastAtMs ?? 0) - (a.lastAtMs ?? 0))[0];
    return { id, summaries: summaries.map((byId) => byId.get(id) ?? summaryOf(undefined)), revenue, currency: opts.currency ?? latest?.currency ?? 'USD' };
  });
  const rates = customers.some((c) => c.revenue.some((r) => r.currency !== c.currency)) ? await loadRates(em, scope) : new Map<string, string>();
  return new Map(customers.map((c) => [c.id, journeyNumbers(c.summaries, c.revenue, c.currency, rates, now)]));
}

function journeyNumbers(summaries: SourceSummary[], revenue: RevenueTotal[], currency: string, rates: Map<string, string>, now: Date): JourneyNumbers {
  const seen = summaries.flatMap((s) => [s.firstSeenMs, s.lastSeenMs]).filter((v): v is number => v !== null);
  const revenueLast = revenue.map((r) => r.lastAtMs).filter((v): v is number => v !== null);
  const lastSeenMs = seen.length || revenueLast.length ? Math.max(...seen, ...revenueLast) : null;
  const paid = revenue.reduce((n, r) => n + r.count, 0);
  let ltvMinor = 0;
  const unconverted: { currency: string; amount: number }[] = [];
  for (const r of revenue) {
    const converted = priceIn({ amount: r.amount, currency: r.currency }, currency, rates).amount;
    if (converted === null) unconverted.push({ currency: r.currency, amount: r.amount });
    else ltvMinor += converted;
  }
  return {
    lifecycle_stage: lifecycleStage({
      touchpoints: summaries.reduce((n, s) => n + s.count, 0), lastSeenMs, paid,
      paidLastYear: revenue.reduce((n, r) => n + r.countLastYear, 0), signals: summaries.flatMap((s) => s.signals),
    }, now),
    total_ltv: toMajorNumber(ltvMinor, currency),
    currency,
    engagement_score: roundScore(summaries.reduce((sum, s) => sum + s.engagement, 0)),
    summary: {
      touchpoints: summaries.reduce((n, s) => n + s.count, 0),
      purchases: summaries.reduce((n, s) => n + s.purchases, 0),
      paid_orders_and_invoices: paid,
      interactions: summaries.reduce((n, s) => n + s.interactions, 0),
      first_seen_at: iso(seen.length ? Math.min(...seen) : null),
      last_seen_at: iso(seen.length ? Math.max(...seen) : null),
    },
    unconverted,
  };
}

/** Computes the journey of one customer (404 if the customer is not in the em's scope). */
export async function customerJourney(
  em: EntityManager, customerId: string, opts: { currency?: string; touchpointLimit?: number; now?: Date } = {},
): Promise<CustomerJourney> {
  const scope = scopeOfEm(em);
  const now = opts.now ?? new Date();
  const numbers = (await customerNumbers(em, [customerId], { currency: opts.currency, now })).get(customerId);
  if (!numbers) throw notFound('customer', customerId);
  const limit = opts.touchpointLimit ?? 100;
  const lists = limit > 0 ? await Promise.all(touchpointSources.map((s) => s.list(em.fork(), scope, customerId, limit))) : [];
  const touchpoints = lists.flat().sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp) || (a.ref < b.ref ? -1 : 1)).slice(-limit);
  return {
    object: 'customer_journey',
    livemode: scope.livemode,
    customer_id: customerId,
    lifecycle_stage: numbers.lifecycle_stage,
    total_ltv: numbers.total_ltv,
    currency: numbers.currency,
    engagement_score: numbers.engagement_score,
    touchpoints,
    summary: numbers.summary,
    unconverted: numbers.unconverted,
    computed_at: now.toISOString(),
  };
}
