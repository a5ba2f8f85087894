import { condition, executeChild, log, patched, type ApplicationFailure } from '@temporalio/workflow';
import type { BillingActivities } from '../../activities/billing/index.ts';
import type { CardOnFile, GatewayName } from '../../domain/payments/public.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import { stepsWithLocalFirstWrite } from '../kit/steps.ts';
import { paymentWorkflowId, type PaymentView, type PaymentWorkflow } from '../payments/shared.ts';
import {
  APPLIED_KEYS_KEPT, DAY_MS, TRANSITIONS, type AppliedChange, periodEndAt, prorate, type PlanSnapshot, type SubscriptionProgress, type SubscriptionSnapshot,
  type SubscriptionState, type SubscriptionStatus, type SubscriptionView, type SubscriptionWorkflowInput,
} from './shared.ts';

/**
 * Database steps. A refusal (a 4xx ApiError: validation, not found, conflict) is never retried: the
 * workers' activity interceptor makes it a non-retryable failure (worker/activity-refusals.ts). No
 * attempt limit otherwise, on purpose: what is retried is an outage, and a subscription's workflow
 * lives for years; giving up would end it half-way through a cycle with nobody to finish it, while
 * retrying resumes it when the database is back (the pending activity, its attempt count and last
 * failure are visible in the Temporal UI meanwhile).
 */
const DB_STEPS = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};
/**
 * A new subscription's first write (the row and `subscription.created`, a versioned upsert) runs
 * locally, in the first workflow task (workflows/kit/steps.ts): POST /v3/subscriptions is answered
 * when that task completes.
 */
const { steps: db, firstWrite } = stepsWithLocalFirstWrite<BillingActivities>(DB_STEPS, 'subscription-record-locally');

type SubscriptionEvent = SubscriptionSnapshot['event'];

/**
 * Collection with no payment method on file: the invoice stays open and the dunning schedule waits
 * (no attempt recorded, no retry counted, no `invoice.payment_failed`) until a card arrives
 * (PATCH payment_method), which collects at once. Histories from before it failed the attempt with
 * `no_payment_method` and ran the retries; `patched` keeps them replaying as they ran.
 */
const WAIT_FOR_PAYMENT_METHOD = 'subscription-no-card-waits-for-payment-method';
/** `dunning.nextRetryAt` while waiting for a payment method: never, until one arrives. */
const AWAITING_PAYMENT_METHOD = Number.MAX_SAFE_INTEGER;

function initialState(input: SubscriptionWorkflowInput): SubscriptionState {
  const start = input.startAt;
  const trialEnd = input.trialPeriodDays > 0 ? start + input.trialPeriodDays * DAY_MS : null;
  const anchor = trialEnd ?? start;
  return {
    status: trialEnd ? 'trialing' : 'active',
    statusBeforePause: null,
    plan: input.plan,
    anchor,
    periodIndex: trialEnd ? 0 : 1,
    periodStart: start,
    periodEnd: trialEnd ?? periodEndAt(anchor, input.billingCycle, 1),
    trialEnd,
    cancelAtPeriodEnd: false,
    canceledAt: null,
    pausedAt: null,
    resumesAt: null,
    dunning: null,
    pendingProrations: [],
    card: input.card,
    gateway: input.gateway,
    clockNow: start,
    version: 0,
    cyclesTotal: 0,
    runs: 1,
  };
}

function invalidTransition(status: SubscriptionStatus, action: string): ApplicationFailure {
  return refuse(REFUSALS.invalidTransition, `A ${status} subscription cannot be ${action}.`, { current_state: status, action });
}

function requireTransition(transition: keyof typeof TRANSITIONS, status: SubscriptionStatus, action: string): void {
  if (!(TRANSITIONS[transition] as readonly string[]).includes(status)) throw invalidTransition(status, action);
}

/**
 * One subscription's state (`state`, what continue-as-new carries) and every transition on it:
 * the updates' validators and handlers, and the steps the main loop runs when something is due
 * (a period end, a dunning retry, a scheduled resume). The database row is a read model only this
 * class writes, one write at a time in the order the changes happened. Time is the test clock's
 * when the subscription has one (advanced by signal), else workflow time.
 */
export class Subscription {
  readonly state: SubscriptionState;
  readonly #input: SubscriptionWorkflowInput;
  readonly #useClock: boolean;
  #view: SubscriptionView | undefined;
  /** Something changed that the main loop's wait must see (an update, a clock advance). */
  #dirty = false;
  #collecting = false;
  #caughtUpTo = 0;
  #cyclesThisRun = 0;
  #retriesDone = 0;
  #writes: Promise<unknown> = Promise.resolve();

  constructor(input: SubscriptionWorkflowInput) {
    this.#input = input;
    this.state = input.state ?? initialState(input);
    this.#useClock = input.testClockId !== null;
  }

  now(): number {
    return this.#useClock ? this.state.clockNow : Date.now();
  }

  get ended(): boolean {
    return this.state.status === 'canceled';
  }

  // ---- Run lifecycle --------------------------------------------------------------------------

  /** A first run writes the row; a continued run reads it back. */
  async open(): Promise<void> {
    const input = this.#input;
    if (input.state) {
      this.state.runs += 1;
      this.#view = await db.getSubscriptionView({ accountId: input.accountId, livemode: input.livemode, subscriptionId: input.subscriptionId });
    } else {
      await this.#save('subscription.created', input.startAt, firstWrite());
    }
  }

  /** This run has billed its share of cycles: time to continue as new. */
  get runIsFull(): boolean {
    return this.#cyclesThisRun >= this.#input.cyclesPerRun;
  }

  /** Settles the row writes queued so far. */
  drain(): Promise<unknown> {
    return this.#writes;
  }

  /** The next run's input: the same subscription, carrying everything it has. */
  continuedInput(): [SubscriptionWorkflowInput] {
    return [{ ...this.#input, state: this.state }];
  }

  /** When the main loop has something to do next (Infinity: only an update or a clock advance can change that). */
  nextEventAt(): number {
    const s = this.state;
    if (s.status === 'canceled' || s.status === 'unpaid') return Infinity;
    if (s.status === 'paused') return s.resumesAt ?? Infinity;
    if (s.dunning && s.status === 'past_due') return Math.min(s.periodEnd, s.dunning.nextRetryAt);
    return s.periodEnd;
  }

  /** Runs what is due now: a scheduled resume, a dunning retry, or the close of the current period. */
  async runDue(): Promise<void> {
    const s = this.state;
    if (s.status === 'paused') {
      const at = s.resumesAt!;
      this.#resumeAt(at);
      await this.#save('subscription.resumed', at);
    } else if (s.dunning && s.status === 'past_due' && s.dunning.nextRetryAt <= s.periodEnd) {
      await this.#retryDunning();
      this.#retriesDone += 1;
    } else {
      await this.#closePeriod();
    }
  }

  /**
   * Nothing is due before `next`: once the row writes are done, billing has caught up with now.
   * Then waits until `next` (the clock's, or a timer) or until something changes.
   */
  async waitUntil(next: number): Promise<void> {
    const t = this.now();
    await this.#writes;
    this.#caughtUpTo = Math.max(this.#caughtUpTo, t);
    this.#dirty = false;
    if (this.#useClock) await condition(() => this.#dirty || this.state.clockNow >= next);
    else if (next === Infinity) await condition(() => this.#dirty);
    else await condition(() => this.#dirty, Math.max(1, next - Date.now()));
  }

  /** The subscription ended: the last writes land, and every clock advance counts as caught up. */
  async close(): Promise<void> {
    await this.#writes;
    this.#caughtUpTo = Number.MAX_SAFE_INTEGER;
  }

  // ---- Queries and signals ----------------------------------------------------------------------

  progress(): SubscriptionProgress {
    return { status: this.state.status, caughtUpTo: this.#caughtUpTo, state: this.state, collecting: this.#collecting };
  }

  advanceClock(t: number): void {
    if (t > this.state.clockNow) this.state.clockNow = t;
    this.#dirty = true;
  }

  // ---- Updates: validator, then handler ---------------------------------------------------------

  /** Answers once the row is written (read-only: it takes no lock). */
  async recorded(): Promise<SubscriptionView> {
    await condition(() => this.#view !== undefined);
    return this.#view!;
  }

  /** Whether the request with this Idempotency-Key already applied this change (a retry after a lost answer). */
  appliedBy(change: AppliedChange, key: string | null | undefined): boolean {
    return !!key && (this.state.appliedBy ?? []).some((a) => a.change === change && a.key === key);
  }

  #remember(change: AppliedChange, key: string | null | undefined): void {
    if (!key) return;
    this.state.appliedBy = [...(this.state.appliedBy ?? []), { change, key }].slice(-APPLIED_KEYS_KEPT);
  }

  /** The answer to a retry of an applied change: the subscription as it is, nothing applied again. */
  async #replayed(): Promise<SubscriptionView> {
    return this.#view ?? this.#save(null);
  }

  validatePause({ resumesAt, idempotencyKey }: { resumesAt: number | null; idempotencyKey?: string | null }): void {
    if (this.appliedBy('pause', idempotencyKey)) return;
    requireTransition('pause', this.state.status, 'paused');
    if (resumesAt !== null && resumesAt <= this.now()) throw refuse(REFUSALS.validationFailed, 'resumes_at must be in the future.', { path: 'resumes_at' });
  }
  async pause({ resumesAt, idempotencyKey }: { resumesAt: number | null; idempotencyKey?: string | null }): Promise<SubscriptionView> {
    if (this.appliedBy('pause', idempotencyKey)) return this.#replayed();
    this.#remember('pause', idempotencyKey);
    const s = this.state;
    s.statusBeforePause = s.status;
    s.status = 'paused';
    s.pausedAt = this.now();
    s.resumesAt = resumesAt;
    this.#dirty = true;
    return this.#save('subscription.paused');
  }

  validateResume({ idempotencyKey }: { idempotencyKey?: string | null } = {}): void {
    if (this.appliedBy('resume', idempotencyKey)) return;
    requireTransition('resume', this.state.status, 'resumed');
  }
  async resume({ idempotencyKey }: { idempotencyKey?: string | null } = {}): Promise<SubscriptionView> {
    if (this.appliedBy('resume', idempotencyKey)) return this.#replayed();
    this.#remember('resume', idempotencyKey);
    this.#resumeAt(this.now());
    this.#dirty = true;
    return this.#save('subscription.resumed');
  }

  validateCancel(): void {
    requireTransition('cancel', this.state.status, 'canceled');
  }
  async cancel({ atPeriodEnd, idempotencyKey }: { atPeriodEnd: boolean; idempotencyKey?: string | null }): Promise<SubscriptionView> {
    const s = this.state;
    this.#dirty = true;
    s.canceledBy = idempotencyKey ?? null;
    if (atPeriodEnd && (s.status === 'trialing' || s.status === 'active' || s.status === 'past_due')) {
      s.cancelAtPeriodEnd = true;
      return this.#save(null);
    }
    this.#cancelAt(this.now());
    return this.#save('subscription.canceled');
  }

  validateChangePlan({ idempotencyKey }: { idempotencyKey?: string | null } = {}): void {
    if (this.appliedBy('changePlan', idempotencyKey)) return;
    requireTransition('changePlan', this.state.status, 'moved to another plan');
  }
  async changePlan({ plan, prorate: withProration, idempotencyKey }: { plan: PlanSnapshot; prorate: boolean; idempotencyKey?: string | null }): Promise<SubscriptionView> {
    if (this.appliedBy('changePlan', idempotencyKey)) return this.#replayed();
    this.#remember('changePlan', idempotencyKey);
    const s = this.state;
    const t = this.now();
    if (withProration && s.status !== 'trialing' && this.#input.billingCycle !== 'usage_based' && t < s.periodEnd) {
      const total = s.periodEnd - s.periodStart;
      const remaining = s.periodEnd - t;
      const credit = prorate(s.plan.amount, remaining, total);
      const charge = prorate(plan.amount, remaining, total);
      if (credit) s.pendingProrations.push({ description: `Unused time on ${s.plan.name}`, amount: -credit, period_start: t, period_end: s.periodEnd });
      if (charge) s.pendingProrations.push({ description: `Remaining time on ${plan.name}`, amount: charge, period_start: t, period_end: s.periodEnd });
    }
    s.plan = plan;
    return this.#save(null);
  }

  validateUpdatePaymentMethod(): void {
    requireTransition('updatePaymentMethod', this.state.status, 'given a new payment method');
  }
  async updatePaymentMethod({ card, gateway }: { card: CardOnFile; gateway: GatewayName }): Promise<SubscriptionView> {
    this.state.card = card;
    this.state.gateway = gateway;
    const dunning = this.state.dunning;
    if (dunning && dunning.nextRetryAt >= AWAITING_PAYMENT_METHOD) {
      // Invoices waited for a payment method: the main loop collects them now, and a failure then
      // starts the plan's retry schedule from its first step (as a failed first collection does).
      dunning.nextRetryAt = this.now();
      dunning.retry = -1;
      this.#dirty = true;
    }
    return this.#save(null);
  }

  validateRetryCollection(): void {
    if (!this.state.dunning) throw invalidTransition(this.state.status, 'retried (no failed collection is pending)');
    if (this.state.status === 'paused') throw invalidTransition(this.state.status, 'retried while paused');
    if (!this.state.card) throw invalidTransition(this.state.status, 'retried without a payment method (send one with PATCH /v3/subscriptions/{id} first)');
  }
  /**
   * Moves the dunning retry to now and answers once the main loop has run it (or the subscription
   * was canceled meanwhile). Its change is one synchronous step, and it takes no lock: holding one
   * for a whole collection would keep a cancel waiting behind it.
   */
  async retryCollection(): Promise<{ retried: boolean; status: SubscriptionStatus }> {
    const before = this.#retriesDone;
    this.state.dunning!.nextRetryAt = this.now();
    this.#dirty = true;
    await condition(() => this.#retriesDone > before || this.state.status === 'canceled');
    return { retried: true, status: this.state.status };
  }

  // ---- The row ----------------------------------------------------------------------------------

  #snapshot(event: SubscriptionEvent, at: number): SubscriptionSnapshot {
    const input = this.#input;
    const s = this.state;
    return {
      subscriptionId: input.subscriptionId, accountId: input.accountId, livemode: input.livemode, customerId: input.customerId,
      planId: s.plan.id, billingCycle: input.billingCycle, autoCollection: input.autoCollection, daysUntilDue: input.daysUntilDue,
      taxJurisdiction: input.taxJurisdiction, testClockId: input.testClockId, card: s.card, gateway: s.card ? s.gateway : null, metadata: input.metadata,
      status: s.status, trialEnd: s.trialEnd, periodStart: s.periodStart, periodEnd: s.periodEnd,
      nextInvoiceAt: s.status === 'canceled' || s.status === 'paused' || s.status === 'unpaid' ? null : s.periodEnd,
      cancelAtPeriodEnd: s.cancelAtPeriodEnd, canceledAt: s.canceledAt, pausedAt: s.pausedAt, resumesAt: s.resumesAt,
      version: ++s.version, createdAt: input.startAt, at, event, requestId: input.requestId,
    };
  }

  /** Writes the row (and the event) in the order the changes happened: one write at a time. */
  async #save(event: SubscriptionEvent = null, at = this.now(), steps = db): Promise<SubscriptionView> {
    recordStatus(this.state.status);
    const snap = this.#snapshot(event, at);
    const write = this.#writes.then(() => steps.saveSubscription(snap));
    this.#writes = write.catch(() => undefined);
    this.#view = await write;
    return this.#view;
  }

  // ---- Transitions the updates and the main loop share ------------------------------------------

  #resumeAt(at: number): void {
    const s = this.state;
    const pausedFor = Math.max(0, at - (s.pausedAt ?? at));
    const before = s.statusBeforePause ?? 'active';
    // Paused time extends the period (and a trial): the customer pays for the time they had.
    s.anchor += pausedFor;
    if (before === 'trialing' && s.trialEnd !== null) {
      s.trialEnd += pausedFor;
      s.periodEnd = s.trialEnd;
    } else {
      s.periodEnd = periodEndAt(s.anchor, this.#input.billingCycle, s.periodIndex);
    }
    if (s.dunning) s.dunning.nextRetryAt += pausedFor;
    s.status = before === 'past_due' && !s.dunning ? 'active' : before;
    s.statusBeforePause = null;
    s.pausedAt = null;
    s.resumesAt = null;
  }

  #cancelAt(at: number): void {
    this.state.status = 'canceled';
    this.state.canceledAt = at;
    this.state.dunning = null;
  }

  // ---- Billing steps (main loop) ----------------------------------------------------------------

  /** One collection attempt through the payment workflow; true when the invoice is paid. */
  async #collect(invoiceId: string, at: number): Promise<boolean> {
    const input = this.#input;
    this.#collecting = true;
    try {
      const plan = await db.prepareCollection({ accountId: input.accountId, livemode: input.livemode, invoiceId });
      if (plan.alreadyPaid) return true;
      const card = this.state.card;
      const gateway = this.state.gateway;
      if (!card || !gateway) {
        await db.recordCollection({ accountId: input.accountId, livemode: input.livemode, invoiceId, attempt: plan.attempt, paymentId: plan.paymentId, outcome: 'failed', failureCode: 'no_payment_method', at });
        return false;
      }
      let payment: PaymentView | null = null;
      try {
        payment = await executeChild<PaymentWorkflow>('paymentWorkflow', {
          workflowId: paymentWorkflowId(plan.paymentId),
          taskQueue: input.paymentsTaskQueue,
          args: [{
            paymentId: plan.paymentId, accountId: input.accountId, livemode: input.livemode, kind: 'charge',
            amount: plan.amount, currency: plan.currency, gateway, card, customerId: input.customerId,
            description: `Invoice ${invoiceId}`, fraudProtection: false,
            metadata: { invoice_id: invoiceId, subscription_id: input.subscriptionId },
            requestIdempotencyKey: `invoice:${invoiceId}:attempt:${plan.attempt}`, requestId: null,
          }],
        });
      } catch (err) {
        log.warn('collection payment failed', { invoiceId, error: String(err) });
      }
      const result = await db.recordCollection({
        accountId: input.accountId, livemode: input.livemode, invoiceId, attempt: plan.attempt, paymentId: plan.paymentId,
        outcome: payment?.status === 'succeeded' ? 'succeeded' : 'failed',
        failureCode: payment?.failure?.decline_code ?? payment?.failure?.code ?? (payment ? null : 'processing_error'), at,
      });
      return result.paid;
    } finally {
      this.#collecting = false;
    }
  }

  /** True when nothing can be charged and the invoices wait for a payment method (see WAIT_FOR_PAYMENT_METHOD). */
  #waitsForPaymentMethod(): boolean {
    return (!this.state.card || !this.state.gateway) && patched(WAIT_FOR_PAYMENT_METHOD);
  }

  #startDunning(invoiceId: string, at: number): void {
    const s = this.state;
    if (s.dunning) {
      if (!s.dunning.invoiceIds.includes(invoiceId)) s.dunning.invoiceIds.push(invoiceId);
    } else {
      const first = s.plan.dunning.retry_schedule_days[0];
      s.dunning = { invoiceIds: [invoiceId], retry: 0, nextRetryAt: first === undefined ? at : at + first * DAY_MS };
    }
    if (s.status === 'active' || s.status === 'trialing') s.status = 'past_due';
    if (s.status === 'paused' && s.statusBeforePause === 'active') s.statusBeforePause = 'past_due';
  }

  async #retryDunning(): Promise<void> {
    const s = this.state;
    const input = this.#input;
    const dunning = s.dunning!;
    if (this.#waitsForPaymentMethod()) {
      dunning.nextRetryAt = AWAITING_PAYMENT_METHOD;
      return;
    }
    const at = dunning.nextRetryAt;
    dunning.retry += 1;
    const unpaid: string[] = [];
    for (const invoiceId of dunning.invoiceIds) if (!(await this.#collect(invoiceId, at))) unpaid.push(invoiceId);
    if (s.status === 'canceled') return;
    if (!unpaid.length) {
      s.dunning = null;
      if (s.status === 'past_due') s.status = 'active';
      await this.#save(null, at);
      return;
    }
    dunning.invoiceIds = unpaid;
    const days = s.plan.dunning.retry_schedule_days;
    if (dunning.retry < days.length) {
      dunning.nextRetryAt = at + days[dunning.retry]! * DAY_MS;
      await this.#save(null, at);
    } else if (s.plan.dunning.final_action === 'cancel') {
      await db.markUncollectible({ accountId: input.accountId, livemode: input.livemode, invoiceIds: unpaid });
      this.#cancelAt(at);
      await this.#save('subscription.canceled', at);
    } else {
      s.dunning = null;
      s.status = 'unpaid';
      await this.#save(null, at);
    }
  }

  async #closePeriod(): Promise<void> {
    const s = this.state;
    const input = this.#input;
    const at = s.periodEnd;
    if (s.status === 'trialing') {
      s.status = 'active';
      s.anchor = at;
      s.periodIndex = 1;
      s.periodStart = at;
      s.periodEnd = periodEndAt(s.anchor, input.billingCycle, 1);
      if (s.cancelAtPeriodEnd) {
        this.#cancelAt(at);
        await this.#save('subscription.canceled', at);
      } else {
        await this.#save(null, at);
      }
      return;
    }
    const invoice = await db.createInvoice({
      accountId: input.accountId, livemode: input.livemode, subscriptionId: input.subscriptionId, customerId: input.customerId,
      plan: s.plan, billingCycle: input.billingCycle, periodStart: s.periodStart, periodEnd: s.periodEnd,
      prorations: s.pendingProrations, autoCollection: input.autoCollection, daysUntilDue: input.daysUntilDue,
      taxJurisdiction: input.taxJurisdiction, card: s.card ? { brand: s.card.brand, last4: s.card.last4 } : null, at,
    });
    s.pendingProrations = [];
    s.cyclesTotal += 1;
    this.#cyclesThisRun += 1;
    s.periodIndex += 1;
    s.periodStart = s.periodEnd;
    s.periodEnd = periodEndAt(s.anchor, input.billingCycle, s.periodIndex);
    if (s.cancelAtPeriodEnd) this.#cancelAt(at);
    await this.#save(s.status === 'canceled' ? 'subscription.canceled' : null, at);
    if (invoice.status === 'open' && input.autoCollection && invoice.amount_due > 0) {
      if (s.status !== 'canceled' && this.#waitsForPaymentMethod()) {
        this.#startDunning(invoice.id, at);
        s.dunning!.nextRetryAt = AWAITING_PAYMENT_METHOD;
        await this.#save(null, at);
      } else if (!(await this.#collect(invoice.id, at)) && s.status !== 'canceled') {
        this.#startDunning(invoice.id, at);
        await this.#save(null, at);
      }
    }
  }
}
