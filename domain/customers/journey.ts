import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { Order } from '../commerce/entities.ts';
import { loadRates, priceIn, type RateTable } from '../commerce/pricing.ts';
import { Interaction, Touchpoint } from '../crm/entities.ts';
import { toMajorNumber } from '../money.ts';
import { SCOPE_FILTER, type Scope } from '../scope.ts';
import { Customer } from './entities.ts';

/**
 * The customer journey: what a customer did and was told, their lifetime value, how engaged they
 * are and where they stand. Sources plug in here: each contributes touchpoints and/or revenue.
 * Commerce (orders), CRM (interactions, recorded visits) and payments are built in; the billing area
 * adds paid invoices by pushing a `RevenueSource` (and, if it wants, a `TouchpointSource`) onto the
 * lists below — nothing else changes.
 *
 * Rules (also in docs/crm.md):
 *
 * total_ltv — the sum of paid orders (payment_status = paid, not canceled: a canceled order's
 *   payment is refunded) and of every registered revenue
 *   source (paid invoices), in the journey's currency, as a decimal major-unit number. Amounts in
 *   other currencies are converted with the account's exchange rates (half-even to the currency's
 *   exponent); amounts with no rate are left out and listed in `unconverted`. The currency is the
 *   `currency` asked for, else the currency of the most recent revenue, else USD.
 *
 * engagement_score — Σ weight × 0.5^(age in days / 30) over every touchpoint, rounded to one
 *   decimal and capped at 100. Weights: purchase 20; meeting 12; call 8; payment 5; chat 5;
 *   email 4; support_ticket 4; website_visit 2; anything else 1; a canceled order 0. Inbound
 *   interactions (the customer reached out) weigh 1.5×. Future timestamps count as age 0.
 *
 * lifecycle_stage — the first rule that matches:
 *   churned     paid before, but no touchpoint of any kind in the last 180 days;
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

/** Money a customer paid, counted toward the lifetime value. */
export interface Revenue {
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  at: Date;
  ref: string;
}

export interface TouchpointSource {
  name: string;
  touchpoints(em: EntityManager, scope: Scope, customerId: string): Promise<JourneyTouchpoint[]>;
}

export interface RevenueSource {
  name: string;
  revenue(em: EntityManager, scope: Scope, customerId: string): Promise<Revenue[]>;
}

/** Per source, at most this many of the most recent records are read. */
const SOURCE_LIMIT = 1000;

const orderTouchpoints: TouchpointSource = {
  name: 'orders',
  async touchpoints(em, _scope, customerId) {
    const orders = await em.find(Order, { customerId }, { orderBy: { id: 'desc' }, limit: SOURCE_LIMIT });
    return orders.map((o) => ({
      timestamp: o.createdAt.toISOString(),
      type: o.status === 'canceled' ? 'order_canceled' : 'purchase',
      source: o.storeId,
      amount: toMajorNumber(o.totalAmount, o.currency),
      currency: o.currency,
      ref: o.id,
    }));
  },
};

const interactionTouchpoints: TouchpointSource = {
  name: 'interactions',
  async touchpoints(em, _scope, customerId) {
    const rows = await em.find(Interaction, { customerId }, { orderBy: { id: 'desc' }, limit: SOURCE_LIMIT });
    return rows.map((i) => ({ timestamp: i.occurredAt.toISOString(), type: i.type, source: 'crm', direction: i.direction, ref: i.id }));
  },
};

const recordedTouchpoints: TouchpointSource = {
  name: 'touchpoints',
  async touchpoints(em, _scope, customerId) {
    const rows = await em.find(Touchpoint, { customerId }, { orderBy: { id: 'desc' }, limit: SOURCE_LIMIT });
    return rows.map((t) => ({ timestamp: t.occurredAt.toISOString(), type: t.type, source: t.source ?? null, ref: t.id }));
  },
};

/** Payments (payments area) as touchpoints; their money reaches the LTV through the paid orders and invoices. */
const paymentTouchpoints: TouchpointSource = {
  name: 'payments',
  async touchpoints(em, scope, customerId) {
    const [exists] = await em.execute<{ ok: boolean }[]>("select to_regclass('payments') is not null as ok");
    if (!exists?.ok) return [];
    const rows = await em.execute<{ id: string; amount: string; currency: string; gateway: string; at: string }[]>(
      `select id, amount::text as amount, currency, gateway, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
         from payments where account_id = ? and livemode = ? and customer_id = ? and status in ('succeeded', 'partially_refunded', 'refunded')
        order by id desc limit ${SOURCE_LIMIT}`,
      [scope.accountId, scope.livemode, customerId],
    );
    return rows.map((p) => {
      const currency = p.currency.toUpperCase();
      return { timestamp: p.at, type: 'payment', source: p.gateway, amount: toMajorNumber(BigInt(p.amount), currency), currency, ref: p.id };
    });
  },
};

const paidOrders: RevenueSource = {
  name: 'paid_orders',
  async revenue(em, _scope, customerId) {
    const orders = await em.find(Order, { customerId, paymentStatus: 'paid', status: { $ne: 'canceled' } }, { orderBy: { id: 'desc' }, fields: ['id', 'totalAmount', 'currency', 'paidAt', 'createdAt'] });
    return orders.map((o) => ({ amount: o.totalAmount, currency: o.currency, at: o.paidAt ?? o.createdAt, ref: o.id }));
  },
};

/** Where touchpoints come from; other areas push their source here. */
export const touchpointSources: TouchpointSource[] = [orderTouchpoints, interactionTouchpoints, recordedTouchpoints, paymentTouchpoints];
/** What counts toward the lifetime value; billing pushes its paid-invoices source here. */
export const revenueSources: RevenueSource[] = [paidOrders];

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

export const LIFECYCLE_STAGES = ['subscriber', 'lead', 'opportunity', 'customer', 'loyal', 'churned'] as const;
export type LifecycleStage = (typeof LIFECYCLE_STAGES)[number];

const WEIGHTS: Record<string, number> = {
  purchase: 20, meeting: 12, call: 8, payment: 5, chat: 5, email: 4, support_ticket: 4, website_visit: 2, order_canceled: 0,
};
const HALF_LIFE_DAYS = 30;
const DAY_MS = 86_400_000;

export function engagementScore(touchpoints: JourneyTouchpoint[], now: Date): number {
  let sum = 0;
  for (const t of touchpoints) {
    const weight = (WEIGHTS[t.type] ?? 1) * (t.direction === 'inbound' ? 1.5 : 1);
    const ageDays = Math.max(0, (now.getTime() - Date.parse(t.timestamp)) / DAY_MS);
    sum += weight * 0.5 ** (ageDays / HALF_LIFE_DAYS);
  }
  return Math.min(100, Math.round(sum * 10) / 10);
}

export function lifecycleStage(touchpoints: JourneyTouchpoint[], revenue: Revenue[], now: Date): LifecycleStage {
  const since = (days: number) => now.getTime() - days * DAY_MS;
  const lastSeen = Math.max(-Infinity, ...touchpoints.map((t) => Date.parse(t.timestamp)), ...revenue.map((r) => r.at.getTime()));
  if (revenue.length && lastSeen < since(180)) return 'churned';
  if (revenue.filter((r) => r.at.getTime() >= since(365)).length >= 3) return 'loyal';
  if (revenue.length) return 'customer';
  if (touchpoints.some((t) => t.type === 'purchase') || touchpoints.some((t) => t.type === 'meeting' && Date.parse(t.timestamp) >= since(90))) {
    return 'opportunity';
  }
  if (touchpoints.length) return 'lead';
  return 'subscriber';
}

function ltvIn(revenue: Revenue[], currency: string, rates: RateTable): { minor: number; unconverted: Map<string, number> } {
  let minor = 0;
  const unconverted = new Map<string, number>();
  for (const r of revenue) {
    const price = priceIn({ amount: r.amount, currency: r.currency }, currency, rates);
    if (price.amount === null) unconverted.set(r.currency, (unconverted.get(r.currency) ?? 0) + r.amount);
    else minor += price.amount;
  }
  return { minor, unconverted };
}

export function scopeOfEm(em: EntityManager): Scope {
  const params = em.getFilterParams<{ accountId?: string; livemode?: boolean }>(SCOPE_FILTER);
  if (!params?.accountId || typeof params.livemode !== 'boolean') throw new Error('journey needs an EntityManager scoped to an account and mode');
  return { accountId: params.accountId, livemode: params.livemode };
}

/** Computes the journey of one customer (404 if the customer is not in the em's scope). */
export async function customerJourney(
  em: EntityManager, customerId: string, opts: { currency?: string; touchpointLimit?: number; now?: Date } = {},
): Promise<CustomerJourney> {
  const scope = scopeOfEm(em);
  const customer = await em.findOne(Customer, { id: customerId }, { fields: ['id', 'livemode'] });
  if (!customer) throw notFound('customer', customerId);
  const now = opts.now ?? new Date();
  const touchpoints: JourneyTouchpoint[] = [];
  for (const source of touchpointSources) touchpoints.push(...(await source.touchpoints(em, scope, customerId)));
  const revenue: Revenue[] = [];
  for (const source of revenueSources) revenue.push(...(await source.revenue(em, scope, customerId)));
  touchpoints.sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp) || (a.ref < b.ref ? -1 : 1));
  revenue.sort((a, b) => b.at.getTime() - a.at.getTime());

  const currency = opts.currency ?? revenue[0]?.currency ?? 'USD';
  const rates = revenue.some((r) => r.currency !== currency) ? await loadRates(em, scope) : new Map<string, string>();
  const ltv = ltvIn(revenue, currency, rates);
  const limit = opts.touchpointLimit ?? 100;
  return {
    object: 'customer_journey',
    livemode: scope.livemode,
    customer_id: customerId,
    lifecycle_stage: lifecycleStage(touchpoints, revenue, now),
    total_ltv: toMajorNumber(ltv.minor, currency),
    currency,
    engagement_score: engagementScore(touchpoints, now),
    touchpoints: limit > 0 ? touchpoints.slice(-limit) : [],
    summary: {
      touchpoints: touchpoints.length,
      purchases: touchpoints.filter((t) => t.type === 'purchase').length,
      paid_orders_and_invoices: revenue.length,
      interactions: touchpoints.filter((t) => t.source === 'crm').length,
      first_seen_at: touchpoints[0]?.timestamp ?? null,
      last_seen_at: touchpoints.at(-1)?.timestamp ?? null,
    },
    unconverted: [...ltv.unconverted].map(([c, amount]) => ({ currency: c, amount })),
    computed_at: now.toISOString(),
  };
}
