import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import { findNewestPerParent, readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import {
  DAY_MS, DEFAULT_DUNNING, isoDay, subscriptionWorkflowId,
  type BillingCycle, type DunningPolicy, type Interval, type InvoiceLineItem, type PlanSnapshot, type ProrationItem,
  type SubscriptionSnapshot, type UsagePricing,
} from '../../workflows/billing/shared.ts';
import type { InvoiceView, PlanView, SubscriptionView, TaxRateView, TestClockView, UsageRecordView } from './schemas.ts';
import { BillingPlan, Invoice, Subscription, TaxRate, TestClock, UsageRecord } from './entities.ts';
import { taxOn, toMicro, fromMicro, usageLines } from './pricing.ts';
import { nextInvoiceNumber } from './invoice-numbers.ts';
import { resolveTemplate } from './invoice-templates.ts';

export type { PlanView, TaxRateView, TestClockView, UsageRecordView } from './schemas.ts';

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

// ---- Plans ----------------------------------------------------------------------------------

export function planView(p: BillingPlan): PlanView {
  return {
    id: p.id, object: 'plan', livemode: p.livemode, name: p.name, currency: p.currency, amount: p.amount, interval: p.interval,
    usage: p.usage ?? null, dunning: p.dunning, metadata: p.metadata, created_at: p.createdAt.toISOString(),
  };
}

export function planSnapshot(p: BillingPlan): PlanSnapshot {
  return { id: p.id, name: p.name, currency: p.currency, amount: p.amount, interval: p.interval, usage: p.usage ?? null, dunning: p.dunning };
}

export async function createPlan(
  em: EntityManager, scope: Scope,
  input: { name: string; currency: string; amount: number; interval: Interval; usage: UsagePricing | null; dunning: DunningPolicy | null; metadata: Record<string, string> },
): Promise<PlanView> {
  const plan = em.create(BillingPlan, {
    id: newId('plan'), ...scopeColumns(scope), name: input.name, currency: input.currency, amount: input.amount, interval: input.interval,
    usage: input.usage, dunning: input.dunning ?? DEFAULT_DUNNING, metadata: input.metadata, createdAt: new Date(),
  });
  await em.flush();
  return planView(plan);
}

export async function findPlan(em: EntityManager, id: string): Promise<BillingPlan> {
  const plan = await em.findOne(BillingPlan, { id });
  if (!plan) throw notFound('plan', id);
  return plan;
}

/** A plan by id for GET /v3/plans/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readPlan(orm: MikroORM, scope: Scope, id: string): Promise<PlanView> {
  return planView(await readScopedOr404(orm, scope, BillingPlan, id, 'plan'));
}

export async function listPlans(em: EntityManager, where: Record<string, unknown>, direction: 'asc' | 'desc', limit: number): Promise<PlanView[]> {
  const rows = await em.find(BillingPlan, where, { orderBy: { id: direction }, limit: limit + 1 });
  return rows.map(planView);
}

// ---- Tax rates ------------------------------------------------------------------------------

function taxRateView(t: TaxRate): TaxRateView {
  return { id: t.id, object: 'tax_rate', livemode: t.livemode, jurisdiction: t.jurisdiction, name: t.name, percentage: fromMicro(toMicro(t.percentage)), created_at: t.createdAt.toISOString() };
}

export async function createTaxRate(em: EntityManager, scope: Scope, input: { jurisdiction: string; name: string; percentage: string }): Promise<TaxRateView> {
  const rate = em.create(TaxRate, { id: newId('taxRate'), ...scopeColumns(scope), ...input, createdAt: new Date() });
  await em.flush();
  return taxRateView(rate);
}

export async function listTaxRates(em: EntityManager, where: Record<string, unknown>, direction: 'asc' | 'desc', limit: number): Promise<TaxRateView[]> {
  return (await em.find(TaxRate, where, { orderBy: { id: direction }, limit: limit + 1 })).map(taxRateView);
}

// ---- Test clocks ----------------------------------------------------------------------------

export function clockView(c: TestClock): TestClockView {
  return { id: c.id, object: 'test_clock', livemode: false, name: c.name ?? null, frozen_time: c.frozenTime.toISOString(), status: c.status, created_at: c.createdAt.toISOString() };
}

export function requireSandbox(scope: Scope): void {
  if (scope.livemode) {
    throw new ApiError({
      status: 403, code: 'test_mode_only', title: 'Forbidden',
      detail: 'Test clocks exist only in the sandbox (test mode).',
      suggestion: 'Use a test key (bp_test_…) to create and advance test clocks.',
    });
  }
}

export async function createTestClock(em: EntityManager, scope: Scope, input: { frozenTime: Date; name: string | null }): Promise<TestClockView> {
  requireSandbox(scope);
  const clock = em.create(TestClock, { id: newId('testClock'), ...scopeColumns(scope), name: input.name, frozenTime: input.frozenTime, status: 'ready', createdAt: new Date() });
  await em.flush();
  return clockView(clock);
}

/** A test clock by id for GET /v3/test_clocks/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readTestClock(orm: MikroORM, scope: Scope, id: string): Promise<TestClockView> {
  return clockView(await readScopedOr404(orm, scope, TestClock, id, 'test clock'));
}

export async function findTestClock(em: EntityManager, id: string): Promise<TestClock> {
  const clock = await em.findOne(TestClock, { id });
  if (!clock) throw notFound('test clock', id);
  return clock;
}

/** How far one advance may move a test clock: every advance replays all billing due up to its target. */
export const MAX_ADVANCE_YEARS = 2;

/** The latest time one advance may reach from `current`: the same instant `MAX_ADVANCE_YEARS` calendar years later (UTC). */
export function maxAdvanceTarget(current: Date): Date {
  const limit = new Date(current.getTime());
  limit.setUTCFullYear(limit.getUTCFullYear() + MAX_ADVANCE_YEARS);
  return limit;
}

/**
 * Moves the clock forward (never back, at most `MAX_ADVANCE_YEARS` at a time) and marks it
 * advancing; answers the subscriptions to signal.
 */
export async function beginAdvance(em: EntityManager, id: string, to: Date): Promise<{ clock: TestClockView; subscriptions: string[] }> {
  return em.transactional(async (tx) => {
    const clock = await tx.findOne(TestClock, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!clock) throw notFound('test clock', id);
    if (to.getTime() <= clock.frozenTime.getTime()) {
      throw validationFailed([{ path: 'frozen_time', message: `must be later than the clock's current time ${clock.frozenTime.toISOString()}` }]);
    }
    const limit = maxAdvanceTarget(clock.frozenTime);
    if (to.getTime() > limit.getTime()) {
      throw validationFailed([{
        path: 'frozen_time',
        message: `may be at most ${MAX_ADVANCE_YEARS} years after the clock's current time ${clock.frozenTime.toISOString()}, i.e. no later than ${limit.toISOString()}; advance in several steps`,
      }]);
    }
    clock.frozenTime = to;
    clock.status = 'advancing';
    const subs = await tx.find(Subscription, { testClockId: id, status: { $ne: 'canceled' } }, { fields: ['id'] });
    return { clock: clockView(clock), subscriptions: subs.map((s) => s.id) };
  });
}

export async function finishAdvance(em: EntityManager, id: string): Promise<TestClockView> {
  const clock = await findTestClock(em, id);
  clock.status = 'ready';
  await em.flush();
  return clockView(clock);
}

// ---- Subscriptions --------------------------------------------------------------------------

export function subscriptionView(s: Subscription): SubscriptionView {
  return {
    id: s.id, object: 'subscription', livemode: s.livemode, customer_id: s.customerId, plan_id: s.planId,
    billing_cycle: s.billingCycle as BillingCycle, status: s.status as SubscriptionView['status'], auto_collection: s.autoCollection,
    days_until_due: s.daysUntilDue, trial_end: iso(s.trialEnd), current_period_start: s.currentPeriodStart.toISOString(),
    current_period_end: s.currentPeriodEnd.toISOString(), next_invoice_date: iso(s.nextInvoiceDate), cancel_at_period_end: s.cancelAtPeriodEnd,
    canceled_at: iso(s.canceledAt), paused_at: iso(s.pausedAt), resumes_at: iso(s.resumesAt), tax_jurisdiction: s.taxJurisdiction ?? null,
    test_clock: s.testClockId ?? null,
    payment_method: s.cardBrand && s.cardLast4
      ? { type: 'card', card: { brand: s.cardBrand, last4: s.cardLast4, exp_month: s.cardExpMonth ?? 0, exp_year: s.cardExpYear ?? 0 } }
      : null,
    workflow_id: s.workflowId, metadata: s.metadata, created_at: s.createdAt.toISOString(), updated_at: s.updatedAt.toISOString(),
  };
}

export async function findSubscription(em: EntityManager, id: string): Promise<Subscription> {
  const sub = await em.findOne(Subscription, { id });
  if (!sub) throw notFound('subscription', id);
  return sub;
}

export async function getSubscription(em: EntityManager, id: string): Promise<SubscriptionView> {
  return subscriptionView(await findSubscription(em, id));
}

/** A subscription by id for GET /v3/subscriptions/{id}, as `readPlan` reads. */
export async function readSubscription(orm: MikroORM, scope: Scope, id: string): Promise<SubscriptionView> {
  return subscriptionView(await readScopedOr404(orm, scope, Subscription, id, 'subscription'));
}

export async function listSubscriptions(
  em: EntityManager, filters: { customer_id?: string[] | undefined; status?: string[] | undefined },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<SubscriptionView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.customer_id) where.customerId = { $in: filters.customer_id };
  if (filters.status) where.status = { $in: filters.status };
  return (await em.find(Subscription, where, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(subscriptionView);
}

/**
 * Writes the subscription row as the workflow sees it, with its event, in one transaction — only
 * when `version` is newer than the stored one, so a retried or late write changes nothing. Answers
 * with the row the write returned; a write that changed nothing reads the row as it is.
 */
export async function saveSubscription(em: EntityManager, snap: SubscriptionSnapshot): Promise<SubscriptionView> {
  const scope = { accountId: snap.accountId, livemode: snap.livemode };
  const d = (ms: number | null) => (ms === null ? null : new Date(ms));
  const written = await em.transactional(async (tx) => {
    const applied = await tx.getConnection().execute<Record<string, unknown>[]>(
      `insert into subscriptions (id, account_id, livemode, customer_id, plan_id, billing_cycle, status, auto_collection, days_until_due,
         trial_end, current_period_start, current_period_end, next_invoice_date, cancel_at_period_end, canceled_at, paused_at, resumes_at,
         tax_jurisdiction, test_clock_id, card_brand, card_last4, card_exp_month, card_exp_year, card_token, card_gateway, workflow_id, version, metadata,
         created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)
       on conflict (id) do update set plan_id = excluded.plan_id, status = excluded.status, trial_end = excluded.trial_end,
         current_period_start = excluded.current_period_start, current_period_end = excluded.current_period_end,
         next_invoice_date = excluded.next_invoice_date, cancel_at_period_end = excluded.cancel_at_period_end,
         canceled_at = excluded.canceled_at, paused_at = excluded.paused_at, resumes_at = excluded.resumes_at,
         card_brand = excluded.card_brand, card_last4 = excluded.card_last4, card_exp_month = excluded.card_exp_month,
         card_exp_year = excluded.card_exp_year, card_token = excluded.card_token,
         card_gateway = case when excluded.card_token is distinct from subscriptions.card_token or excluded.card_gateway is not null
           then excluded.card_gateway else subscriptions.card_gateway end,
         version = excluded.version, updated_at = excluded.updated_at
       where subscriptions.version < excluded.version
       returning *`,
      [snap.subscriptionId, snap.accountId, snap.livemode, snap.customerId, snap.planId, snap.billingCycle, snap.status, snap.autoCollection,
        snap.daysUntilDue, d(snap.trialEnd), d(snap.periodStart), d(snap.periodEnd), d(snap.nextInvoiceAt), snap.cancelAtPeriodEnd,
        d(snap.canceledAt), d(snap.pausedAt), d(snap.resumesAt), snap.taxJurisdiction, snap.testClockId, snap.card?.brand ?? null,
        snap.card?.last4 ?? null, snap.card?.expMonth ?? null, snap.card?.expYear ?? null, snap.card?.token ?? null, snap.card ? snap.gateway ?? null : null,
        subscriptionWorkflowId(snap.subscriptionId), snap.version, JSON.stringify(snap.metadata), new Date(snap.createdAt), new Date(snap.at)],
      'all', tx.getTransactionContext());
    if (!applied.length) return undefined;
    const view = subscriptionView(tx.map(Subscription, applied[0] as never));
    if (snap.event) recordEvent(tx, scope, { type: snap.event, object: view, customerId: snap.customerId, requestId: snap.requestId });
    return view;
  });
  return written ?? getSubscription(em.fork(), snap.subscriptionId);
}

// ---- Invoices -------------------------------------------------------------------------------

export function invoiceView(i: Invoice): InvoiceView {
  return {
    id: i.id, object: 'invoice', livemode: i.livemode, customer_id: i.customerId, subscription_id: i.subscriptionId ?? null,
    number: i.number ?? null, template_id: i.templateId ?? null, status: i.status,
    currency: i.currency, subtotal: i.subtotal, tax: i.tax, amount: i.amount, amount_due: i.status === 'paid' ? 0 : i.amount - i.amountPaid,
    amount_paid: i.amountPaid, due_date: i.dueDate, period_start: i.periodStart.toISOString(), period_end: i.periodEnd.toISOString(),
    line_items: i.lineItems, taxes: i.taxes, payment_method: i.paymentMethod ?? null, auto_collection: i.autoCollection,
    attempt_count: i.attemptCount, last_payment_id: i.lastPaymentId ?? null, paid_at: iso(i.paidAt), finalized_at: iso(i.finalizedAt),
    created_at: i.createdAt.toISOString(),
  };
}

/** An invoice by id for GET /v3/invoices/{id}, as `readPlan` reads. */
export async function readInvoice(orm: MikroORM, scope: Scope, id: string): Promise<InvoiceView> {
  return invoiceView(await readScopedOr404(orm, scope, Invoice, id, 'invoice'));
}

export async function listInvoices(
  em: EntityManager, filters: { customer_id?: string[] | undefined; subscription_id?: string[] | undefined; status?: string[] | undefined },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<InvoiceView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.customer_id) where.customerId = { $in: filters.customer_id };
  if (filters.subscription_id) where.subscriptionId = { $in: filters.subscription_id };
  if (filters.status) where.status = { $in: filters.status };
  return (await em.find(Invoice, where, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(invoiceView);
}

export interface CreateInvoiceInput {
  accountId: string;
  livemode: boolean;
  subscriptionId: string;
  customerId: string;
  plan: PlanSnapshot;
  billingCycle: BillingCycle;
  periodStart: number;
  periodEnd: number;
  prorations: ProrationItem[];
  autoCollection: boolean;
  daysUntilDue: number;
  taxJurisdiction: string | null;
  card: { brand: string; last4: string } | null;
  /** When the invoice is issued (the period end, on the subscription's clock). */
  at: number;
}

export function maskedCard(card: { brand: string; last4: string } | null): string | null {
  return card ? `${card.brand} **** ${card.last4}` : null;
}

/**
 * The invoice of one period, exactly once (unique per subscription and period start): the flat
 * amount, the period's usage (records in [start, end), marked with the invoice so later ones for
 * the period are refused), pending prorations, and the account's tax rates for the jurisdiction
 * on each line, rounded half-even. Records `invoice.created`.
 */
export async function createPeriodInvoice(em: EntityManager, input: CreateInvoiceInput): Promise<InvoiceView> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return em.transactional(async (tx) => {
    // The subscription row lock orders this against usage records being added for the period.
    await tx.findOne(Subscription, { id: input.subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const existing = await tx.findOne(Invoice, { subscriptionId: input.subscriptionId, periodStart: new Date(input.periodStart) });
    if (existing) return invoiceView(existing);

    const period = { start: new Date(input.periodStart).toISOString(), end: new Date(input.periodEnd).toISOString() };
    const lines: Omit<InvoiceLineItem, 'tax_amounts'>[] = [];
    if (input.billingCycle !== 'usage_based' && input.plan.amount > 0) {
      lines.push({ type: 'subscription', description: `${input.plan.name} (${input.billingCycle})`, quantity: '1', unit_amount: String(input.plan.amount), amount: input.plan.amount, period });
    }
    const invoiceId = newId('invoice');
    if (input.plan.usage) {
      const rows = await tx.getConnection().execute<{ total: string | null }[]>(
        `update usage_records set invoice_id = ? where subscription_id = ? and account_id = ? and livemode = ? and metric_name = ?
           and timestamp >= ? and timestamp < ? and invoice_id is null returning quantity::text as total`,
        [invoiceId, input.subscriptionId, input.accountId, input.livemode, input.plan.usage.metric_name, new Date(input.periodStart), new Date(input.periodEnd)],
        'all', tx.getTransactionContext());
      const total = rows.reduce((sum, r) => sum + toMicro(r.total ?? '0'), 0n);
      for (const u of usageLines(input.plan.usage, fromMicro(total))) {
        lines.push({ type: 'usage', description: u.description, quantity: u.quantity, unit_amount: u.unitAmount, amount: u.amount, period });
      }
    }
    for (const p of input.prorations) {
      lines.push({
        type: 'proration', description: p.description, quantity: '1', unit_amount: null, amount: p.amount,
        period: { start: new Date(p.period_start).toISOString(), end: new Date(p.period_end).toISOString() },
      });
    }
    const rates = input.taxJurisdiction ? await tx.find(TaxRate, { jurisdiction: input.taxJurisdiction }, { orderBy: { id: 'asc' } }) : [];
    const taxed: InvoiceLineItem[] = lines.map((l) => ({ ...l, tax_amounts: rates.map((r) => ({ tax_rate_id: r.id, amount: taxOn(l.amount, r.percentage) })) }));
    const taxes = rates.map((r) => ({
      tax_rate_id: r.id, name: r.name, jurisdiction: r.jurisdiction, percentage: fromMicro(toMicro(r.percentage)),
      taxable_amount: taxed.reduce((n, l) => n + l.amount, 0),
      amount: taxed.reduce((n, l) => n + (l.tax_amounts.find((t) => t.tax_rate_id === r.id)?.amount ?? 0), 0),
    }));
    const subtotal = Math.max(0, taxed.reduce((n, l) => n + l.amount, 0));
    const tax = Math.max(0, taxes.reduce((n, t) => n + t.amount, 0));
    const at = new Date(input.at);
    // Issued finalised: its number now (the invoice's year on the subscription's clock), gap-free (invoice-documents.ts).
    const template = await resolveTemplate(tx, scope, { subscriptionId: input.subscriptionId, customerId: input.customerId });
    const number = await nextInvoiceNumber(tx, scope, template.numberPrefix, at);
    const invoice = tx.create(Invoice, {
      id: invoiceId, ...scopeColumns(scope), customerId: input.customerId, subscriptionId: input.subscriptionId, number, templateId: template.id, finalizedAt: at,
      status: subtotal + tax === 0 ? 'paid' : 'open', currency: input.plan.currency, subtotal, tax, amount: subtotal + tax, amountPaid: 0,
      periodStart: new Date(input.periodStart), periodEnd: new Date(input.periodEnd),
      dueDate: isoDay(input.autoCollection ? input.at : input.at + input.daysUntilDue * DAY_MS),
      lineItems: taxed, taxes, paymentMethod: input.autoCollection ? maskedCard(input.card) : null, autoCollection: input.autoCollection,
      attemptCount: 0, lastPaymentId: null, paidAt: subtotal + tax === 0 ? at : null, createdAt: at, updatedAt: at,
    });
    recordEvent(tx, scope, { type: 'invoice.created', object: invoiceView(invoice), customerId: input.customerId });
    await tx.flush();
    return invoiceView(invoice);
  });
}

/** The next collection attempt of an invoice, with its payment id (the same one when retried). */
export async function prepareCollection(em: EntityManager, invoiceId: string): Promise<{ attempt: number; paymentId: string; amount: number; currency: string; alreadyPaid: boolean }> {
  return em.transactional(async (tx) => {
    const inv = await tx.findOne(Invoice, { id: invoiceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!inv) throw notFound('invoice', invoiceId);
    const base = { amount: inv.amount - inv.amountPaid, currency: inv.currency, alreadyPaid: inv.status === 'paid' };
    const open = await tx.getConnection().execute<{ attempt: number; payment_id: string }[]>(
      `select attempt, payment_id from invoice_collection_attempts where invoice_id = ? and status = 'processing'`, [invoiceId], 'all', tx.getTransactionContext());
    if (open[0]) return { ...base, attempt: open[0].attempt, paymentId: open[0].payment_id };
    const attempt = inv.attemptCount + 1;
    const paymentId = newId('payment');
    await tx.getConnection().execute(
      `insert into invoice_collection_attempts (invoice_id, attempt, payment_id, status, created_at) values (?, ?, ?, 'processing', now())`,
      [invoiceId, attempt, paymentId], 'run', tx.getTransactionContext());
    inv.attemptCount = attempt;
    inv.lastPaymentId = paymentId;
    return { ...base, attempt, paymentId };
  });
}

/** Records an attempt's outcome once: `invoice.paid` or `invoice.payment_failed`. */
export async function recordCollection(
  em: EntityManager, input: { invoiceId: string; attempt: number; paymentId: string; outcome: 'succeeded' | 'failed'; failureCode: string | null; at: number },
): Promise<{ paid: boolean }> {
  return em.transactional(async (tx) => {
    const inv = await tx.findOne(Invoice, { id: input.invoiceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!inv) throw notFound('invoice', input.invoiceId);
    const updated = await tx.getConnection().execute<{ invoice_id: string }[]>(
      `update invoice_collection_attempts set status = ?, failure_code = ? where invoice_id = ? and attempt = ? and status = 'processing' returning invoice_id`,
      [input.outcome, input.failureCode, input.invoiceId, input.attempt], 'all', tx.getTransactionContext());
    if (!updated.length) return { paid: inv.status === 'paid' };
    const scope = { accountId: inv.accountId, livemode: inv.livemode };
    if (input.outcome === 'succeeded') {
      inv.status = 'paid';
      inv.amountPaid = inv.amount;
      inv.paidAt = new Date(input.at);
    }
    inv.updatedAt = new Date(input.at);
    recordEvent(tx, scope, {
      type: input.outcome === 'succeeded' ? 'invoice.paid' : 'invoice.payment_failed',
      object: { ...invoiceView(inv), ...(input.failureCode ? { last_payment_error: { code: input.failureCode, payment_id: input.paymentId } } : {}) },
      customerId: inv.customerId,
    });
    return { paid: input.outcome === 'succeeded' };
  });
}

export async function markUncollectible(em: EntityManager, invoiceIds: string[]): Promise<void> {
  const invoices = await em.find(Invoice, { id: { $in: invoiceIds }, status: 'open' });
  for (const inv of invoices) inv.status = 'uncollectible';
  await em.flush();
}

// ---- Usage ----------------------------------------------------------------------------------

function usageView(u: UsageRecord): UsageRecordView {
  return {
    id: u.id, object: 'usage_record', livemode: u.livemode, subscription_id: u.subscriptionId, metric_name: u.metricName,
    quantity: Number(fromMicro(toMicro(String(u.quantity)))), timestamp: u.timestamp.toISOString(), invoice_id: u.invoiceId ?? null, created_at: u.createdAt.toISOString(),
  };
}

/**
 * Records usage for a usage-priced subscription. The timestamp defaults to now (the test clock's
 * time for a test-clock subscription); it must fall in a period not yet invoiced. One record per
 * Idempotency-Key, also after the HTTP replay window.
 */
export async function recordUsage(
  em: EntityManager, scope: Scope,
  input: { subscriptionId: string; metricName: string; quantity: string; timestamp: Date | null; requestIdempotencyKey: string | null },
): Promise<UsageRecordView> {
  if (input.requestIdempotencyKey) {
    const existing = await em.findOne(UsageRecord, { requestIdempotencyKey: input.requestIdempotencyKey });
    if (existing) return usageView(existing);
  }
  return em.transactional(async (tx) => {
    const sub = await tx.findOne(Subscription, { id: input.subscriptionId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!sub) throw validationFailed([{ path: 'subscription_id', message: `no subscription with id '${input.subscriptionId}' exists in this account and mode` }]);
    if (sub.status === 'canceled' || sub.status === 'unpaid') {
      throw conflict('subscription_not_active', `Subscription ${sub.id} is ${sub.status}; it takes no more usage.`, 'Record usage only for trialing, active, paused or past_due subscriptions.', { subscription_status: sub.status });
    }
    const plan = await tx.findOneOrFail(BillingPlan, { id: sub.planId });
    if (!plan.usage || plan.usage.metric_name !== input.metricName) {
      throw validationFailed([{
        path: 'metric_name',
        message: plan.usage ? `unknown metric '${input.metricName}' for plan ${plan.id}; it meters '${plan.usage.metric_name}'` : `plan ${plan.id} has no usage pricing`,
      }]);
    }
    let timestamp = input.timestamp;
    if (!timestamp) timestamp = sub.testClockId ? (await tx.findOneOrFail(TestClock, { id: sub.testClockId })).frozenTime : new Date();
    if (timestamp.getTime() < sub.currentPeriodStart.getTime()) {
      throw validationFailed([{ path: 'timestamp', message: `falls in a period already invoiced; the current period started at ${sub.currentPeriodStart.toISOString()}` }]);
    }
    const record = tx.create(UsageRecord, {
      id: newId('usageRecord'), ...scopeColumns(scope), subscriptionId: sub.id, metricName: input.metricName,
      quantity: fromMicro(toMicro(input.quantity)), timestamp, requestIdempotencyKey: input.requestIdempotencyKey, invoiceId: null, createdAt: new Date(),
    });
    await tx.flush();
    return usageView(record);
  });
}

/** The newest `perCustomer` subscriptions of each of many customers (optionally in some statuses), in one query. */
export async function subscriptionsOfCustomers(
  em: EntityManager, customerIds: readonly string[], perCustomer: number, status?: readonly string[],
): Promise<SubscriptionView[]> {
  return (await findNewestPerParent(em, Subscription, 'customerId', customerIds, perCustomer, { status })).map(subscriptionView);
}

/** The newest `perCustomer` invoices of each of many customers (optionally in some statuses), in one query. */
export async function invoicesOfCustomers(
  em: EntityManager, customerIds: readonly string[], perCustomer: number, status?: readonly string[],
): Promise<InvoiceView[]> {
  return (await findNewestPerParent(em, Invoice, 'customerId', customerIds, perCustomer, { status })).map(invoiceView);
}
