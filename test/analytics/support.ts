import { randomBytes } from 'node:crypto';
import { permissionScopes } from '../../domain/registry.ts';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';

/**
 * Fixtures written straight into the other areas' tables (the rows their workflows would write),
 * so every figure can be checked against numbers computed by hand.
 */
export class Fixtures {
  private n = 0;
  /** Several fixture sets may write into one account. */
  private readonly tag = randomBytes(3).toString('hex');
  private readonly platform: TestPlatform;
  protected platformSql(sql: string, params: unknown[]): Promise<unknown> {
    return this.platform.sql(sql, params);
  }
  readonly accountId: string;
  readonly livemode: boolean;

  constructor(platform: TestPlatform, accountId: string, livemode = false) {
    this.platform = platform;
    this.accountId = accountId;
    this.livemode = livemode;
  }

  private id(prefix: string): string {
    this.n += 1;
    return `${prefix}_fx${this.accountId.slice(-8)}${this.livemode ? 'l' : 't'}${this.tag}${String(this.n).padStart(5, '0')}`;
  }

  async customer(createdAt = '2024-12-01T00:00:00Z', name: string | null = null): Promise<string> {
    const id = this.id('cus');
    await this.platform.sql(
      `insert into customers (id, account_id, livemode, email, name, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $6)`,
      [id, this.accountId, this.livemode, `${id}@example.com`, name, createdAt],
    );
    return id;
  }

  async plan(amount: number, currency: string, interval: 'monthly' | 'quarterly' | 'yearly'): Promise<string> {
    const id = this.id('plan');
    await this.platform.sql(
      `insert into billing_plans (id, account_id, livemode, name, currency, amount, interval, dunning, created_at) values ($1, $2, $3, 'Plan', $4, $5, $6, '{}', now())`,
      [id, this.accountId, this.livemode, currency, amount, interval],
    );
    return id;
  }

  async subscription(customerId: string, planId: string, createdAt: string, opts: { canceledAt?: string; trialEnd?: string } = {}): Promise<string> {
    const id = this.id('sub');
    const status = opts.canceledAt ? 'canceled' : opts.trialEnd ? 'trialing' : 'active';
    await this.platform.sql(
      `insert into subscriptions (id, account_id, livemode, customer_id, plan_id, billing_cycle, status, auto_collection, days_until_due,
                                  trial_end, current_period_start, current_period_end, canceled_at, workflow_id, version, created_at, updated_at)
       values ($1, $2, $3, $4, $5, 'monthly', $6, true, 30, $7, $8, $8::timestamptz + interval '1 month', $9, 'subscription-' || $1, 1, $8, $8)`,
      [id, this.accountId, this.livemode, customerId, planId, status, opts.trialEnd ?? null, createdAt, opts.canceledAt ?? null],
    );
    return id;
  }

  async payment(amount: number, currency: string, at: string, opts: { status?: string; customerId?: string; split?: { fee: number } } = {}): Promise<string> {
    const id = this.id('pay');
    await this.platform.sql(
      `insert into payments (id, account_id, livemode, kind, status, amount, currency, customer_id, gateway, card_brand, card_last4,
                             card_exp_month, card_exp_year, card_token, platform_fee, split_status, workflow_id, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, 'sandbox', 'visa', '4242', 12, 2030, 'tok', $9, $10, 'payment-' || $1, $11, $11)`,
      [id, this.accountId, this.livemode, opts.split ? 'marketplace_split' : 'charge', opts.status ?? 'succeeded', amount, currency,
        opts.customerId ?? null, opts.split?.fee ?? null, opts.split ? 'completed' : null, at],
    );
    return id;
  }

  async payments(rows: { amount: number; currency: string; at: string }[]): Promise<void> {
    await this.platform.sql(
      `insert into payments (id, account_id, livemode, kind, status, amount, currency, gateway, card_brand, card_last4,
                             card_exp_month, card_exp_year, card_token, workflow_id, created_at, updated_at)
       select id, $1, $2, 'charge', 'succeeded', amount, currency, 'sandbox', 'visa', '4242', 12, 2030, 'tok', 'payment-' || id, at, at
         from unnest($3::text[], $4::bigint[], $5::text[], $6::timestamptz[]) as t(id, amount, currency, at)`,
      [this.accountId, this.livemode, rows.map(() => this.id('pay')), rows.map((r) => r.amount), rows.map((r) => r.currency), rows.map((r) => r.at)],
    );
  }

  async refund(paymentId: string, amount: number, currency: string, at: string): Promise<string> {
    const id = this.id('re');
    await this.platform.sql(
      `insert into payment_refunds (id, account_id, livemode, payment_id, amount, currency, status, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, 'succeeded', $7, $7)`,
      [id, this.accountId, this.livemode, paymentId, amount, currency, at],
    );
    return id;
  }

  /** A paid invoice, collected by a payment (which therefore is not one-time revenue). */
  async paidInvoice(subscriptionId: string, customerId: string, amount: number, currency: string, paidAt: string): Promise<{ invoiceId: string; paymentId: string }> {
    const invoiceId = this.id('inv');
    const paymentId = await this.payment(amount, currency, paidAt, { customerId });
    await this.platform.sql(
      `insert into invoices (id, account_id, livemode, customer_id, subscription_id, status, currency, subtotal, tax, amount, amount_paid,
                             period_start, period_end, due_date, line_items, taxes, auto_collection, last_payment_id, paid_at, created_at, updated_at)
       values ($1, $2, $3, $4, $5, 'paid', $6, $7, 0, $7, $7, $8::timestamptz - interval '1 month', $8, ($8::timestamptz)::date, '[]', '[]', true, $9, $8, $8, $8)`,
      [invoiceId, this.accountId, this.livemode, customerId, subscriptionId, currency, amount, paidAt, paymentId],
    );
    await this.platform.sql(
      `insert into invoice_collection_attempts (invoice_id, attempt, payment_id, status, created_at) values ($1, 1, $2, 'succeeded', $3)`,
      [invoiceId, paymentId, paidAt],
    );
    return { invoiceId, paymentId };
  }

  async store(currency = 'USD'): Promise<string> {
    const id = this.id('store');
    await this.platform.sql(
      `insert into stores (id, account_id, livemode, name, default_currency, fulfillment_deadline_seconds, created_at) values ($1, $2, $3, 'Shop', $4, 86400, now())`,
      [id, this.accountId, this.livemode, currency],
    );
    return id;
  }

  async order(storeId: string, customerId: string, total: number, currency: string, at: string, opts: { status?: string; fulfilledAt?: string; units?: number } = {}): Promise<string> {
    const id = this.id('ord');
    await this.platform.sql(
      `insert into orders (id, account_id, livemode, store_id, customer_id, status, total_amount, currency, line_items, shipping_address,
                           fulfillment_deadline, workflow_id, fulfilled_at, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, '{}', $10::timestamptz + interval '1 day', 'order-' || $1, $11, $10, $10)`,
      [id, this.accountId, this.livemode, storeId, customerId, opts.status ?? (opts.fulfilledAt ? 'fulfilled' : 'processing'), total, currency,
        JSON.stringify([{ sku: 'SKU-1', quantity: opts.units ?? 1 }]), at, opts.fulfilledAt ?? null],
    );
    return id;
  }

  async rate(base: string, quote: string, rate: string): Promise<void> {
    await this.platform.sql(
      `insert into exchange_rates (account_id, livemode, base_currency, quote_currency, rate, updated_at) values ($1, $2, $3, $4, $5, now())`,
      [this.accountId, this.livemode, base, quote, rate],
    );
  }
}

/**
 * Fixtures of the areas analytics reads since migrations 0071–0073: the ERP ledger's postings,
 * shipments, stock, calls, loyalty points and plan changes.
 */
export class AreaFixtures extends Fixtures {
  private m = 0;

  private key(prefix: string): string {
    this.m += 1;
    return `${prefix}_ax${this.accountId.slice(-8)}${this.livemode ? 'l' : 't'}${String(this.m).padStart(5, '0')}`;
  }

  /** A posting of an event by ERP (postings.ts): `invoice.paid` → revenue, `payment.succeeded` → transfer, `payment.refunded` → refund. */
  async ledgerPosting(type: 'revenue' | 'transfer' | 'refund', sourceId: string, amount: number, currency: string, at: string): Promise<string> {
    const id = this.key('txn');
    await this.platformSql(
      `insert into financial_transactions (id, account_id, livemode, type, status, amount, currency, base_currency, base_amount, exchange_rate,
                                           account_code, counter_account_code, tax_inclusive, tax_rate, net_amount, tax_amount, transaction_date,
                                           source_type, source_id, source_event_id, created_at)
       values ($1, $2, $3, $4, 'posted', $5, $6, $6, $5, 1, '4000', '1200', true, 0, $5, 0, ($7::timestamptz)::date, 'event', $8, 'evt_' || $1, $7)`,
      [id, this.accountId, this.livemode, type, amount, currency, at, sourceId],
    );
    return id;
  }

  /** ERP's reversal of a posting (its only way to undo one). */
  async ledgerReversal(transactionId: string, at: string): Promise<void> {
    const id = this.key('txn');
    await this.platformSql(
      `insert into financial_transactions (id, account_id, livemode, type, status, amount, currency, base_currency, base_amount, exchange_rate,
                                           account_code, counter_account_code, tax_inclusive, tax_rate, net_amount, tax_amount, transaction_date,
                                           source_type, reversal_of_id, created_at)
       select $1, account_id, livemode, type, 'posted', amount, currency, base_currency, base_amount, exchange_rate, counter_account_code, account_code,
              tax_inclusive, tax_rate, net_amount, tax_amount, ($3::timestamptz)::date, 'reversal', id, $3
         from financial_transactions where id = $2`,
      [id, transactionId, at],
    );
    await this.platformSql(`update financial_transactions set status = 'reversed', reversed_by_id = $1 where id = $2`, [id, transactionId]);
  }

  /** A shipment delivered at `deliveredAt`, promised for `promised` when its label was bought. */
  async shipment(promised: string, deliveredAt: string | null): Promise<void> {
    const id = this.key('shp');
    await this.platformSql(
      `insert into shipping_shipments (id, account_id, livemode, order_id, status, carrier, service_level, tracking_number, carrier_reference, label_url,
                                       rate_amount, rate_currency, rate_estimated_days, estimated_delivery, original_estimated_delivery, origin, destination,
                                       packages, scenario, label_created_at, delivered_at, workflow_id, created_at, updated_at)
       values ($1, $2, $3, 'ord_x', $4, 'sandbox', 'ground', $1, $1, 'https://example.com/label', 500, 'USD', 3, $5, $5, '{}', '{}', '[]', 'default',
               $5::timestamptz - interval '3 days', $6, 'shipment-' || $1, $5::timestamptz - interval '3 days', now())`,
      [id, this.accountId, this.livemode, deliveredAt ? 'delivered' : 'in_transit', promised, deliveredAt],
    );
  }

  /** A warehouse whose SKU holds `onHandNow` units today, and the movements that led there (their own times). */
  async stock(onHandNow: number, movements: { change: number; reason: string; at: string }[]): Promise<void> {
    const warehouse = this.key('wh');
    await this.platformSql(`insert into warehouses (id, account_id, livemode, name, created_at) values ($1, $2, $3, 'Main', now())`,
      [warehouse, this.accountId, this.livemode]);
    await this.platformSql(
      `insert into inventory_levels (account_id, livemode, warehouse_id, sku, quantity, updated_at) values ($1, $2, $3, 'SKU-T', $4, now())`,
      [this.accountId, this.livemode, warehouse, onHandNow],
    );
    // The level's own trigger recorded its insert as a movement now: replace it by the history.
    await this.platformSql('delete from stock_movements where account_id = $1 and livemode = $2 and warehouse_id = $3', [this.accountId, this.livemode, warehouse]);
    let q = onHandNow - movements.reduce((s, m) => s + m.change, 0);
    for (const m of movements) {
      await this.platformSql(
        `insert into stock_movements (account_id, livemode, warehouse_id, sku, quantity_before, quantity_after, reserved_before, reserved_after,
                                      in_transit_before, in_transit_after, reason, created_at)
         values ($1, $2, $3, 'SKU-T', $4, $5, 0, 0, 0, 0, $6, $7)`,
        [this.accountId, this.livemode, warehouse, q, q + m.change, m.reason, m.at],
      );
      q += m.change;
    }
  }

  async call(status: 'completed' | 'failed' | 'no_answer', duration: number, at: string): Promise<void> {
    const id = this.key('call');
    await this.platformSql(
      `insert into comm_calls (id, account_id, livemode, to_number, from_number, record_call, ring_timeout, status, destination_country, duration,
                               rate_per_minute, currency, workflow_id, created_at, updated_at)
       values ($1, $2, $3, '+4930123456', '+4930654321', false, 30, $4, 'DE', $5, 2, 'USD', 'call-' || $1, $6, $6)`,
      [id, this.accountId, this.livemode, status, duration, at],
    );
  }

  async pointsEarned(customerId: string, points: number, reversed: number, at: string): Promise<void> {
    const id = this.key('lgr');
    await this.platformSql(
      `insert into loyalty_grants (id, account_id, livemode, customer_id, source, base_points, multiplier, tier, tier_multiplier, points, remaining_points,
                                   reversed_points, status, reason, awarded_at, available_at, created_at)
       values ($1, $2, $3, $4, 'award', $5, 1, 'bronze', 1, $5, $5::bigint - $6::bigint, $6, 'available', 'test', $7, $7, $7)`,
      [id, this.accountId, this.livemode, customerId, points, reversed, at],
    );
  }

  async pointsRedeemed(customerId: string, points: number, at: string): Promise<void> {
    const reward = this.key('rwd');
    await this.platformSql(
      `insert into loyalty_rewards (id, account_id, livemode, name, cost, status, created_at, updated_at) values ($1, $2, $3, 'Mug', $4, 'active', $5, $5)`,
      [reward, this.accountId, this.livemode, points, at],
    );
    await this.platformSql(
      `insert into loyalty_redemptions (id, account_id, livemode, customer_id, reward_id, points_used, code, balance_after, created_at)
       values ($1, $2, $3, $4, $5, $6, $1, 0, $7)`,
      [this.key('lrd'), this.accountId, this.livemode, customerId, reward, points, at],
    );
  }

  /** What billing's saveSubscription writes when the workflow changes a plan (`changePlan`): the row's plan, version and time. */
  async changePlan(subscriptionId: string, planId: string, at: string): Promise<void> {
    await this.platformSql('update subscriptions set plan_id = $2, version = version + 1, updated_at = $3 where id = $1', [subscriptionId, planId, at]);
  }
}

/** The admin tRPC API, called in-process. */
export function adminCaller(platform: TestPlatform) {
  return createCallerFactory(adminRouter)(createContextInner({
    orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 'test-admin-token-0123456789', presentedToken: 'test-admin-token-0123456789',
  }));
}

/** A deterministic pseudo-random generator (mulberry32) and a normal deviate from it. */
export function seededNormal(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform() || 1e-12)) * Math.cos(2 * Math.PI * uniform());
}
