import {
  ApplicationFailure, allHandlersFinished, condition, continueAsNew, executeChild, log, proxyActivities, setHandler, workflowInfo,
} from '@temporalio/workflow';
import type { BillingActivities } from '../../activities/billing.ts';
import type { paymentWorkflow } from '../payments/payment.ts';
import { paymentWorkflowId, type PaymentView } from '../payments/shared.ts';
import {
  DAY_MS, INVALID_TRANSITION, TRANSITIONS, advanceClockSignal, awaitSubscriptionRecordedUpdate, cancelSubscriptionUpdate,
  changePlanUpdate, pauseSubscriptionUpdate, periodEndAt, prorate, resumeSubscriptionUpdate, retryCollectionUpdate, updatePaymentMethodUpdate,
  subscriptionProgressQuery, type SubscriptionSnapshot, type SubscriptionState, type SubscriptionStatus, type SubscriptionView,
  type SubscriptionWorkflowInput,
} from './shared.ts';

const db = proxyActivities<BillingActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

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
  return ApplicationFailure.create({
    type: INVALID_TRANSITION, nonRetryable: true,
    message: `A ${status} subscription cannot be ${action}.`,
    details: [{ status, action }],
  });
}

/**
 * One subscription for its whole life (`subscription-sub_…`): trial, billing periods, an invoice at
 * each period end (collected through the payment workflow as a child when auto collection is on),
 * dunning on the plan's schedule, pause/resume, plan changes and cancellation. The database row is
 * a read model only this workflow writes (its first activity creates it). Time is the test clock's
 * when the subscription has one (advanced by signal), else workflow time; the workflow waits on
 * conditions with timeouts so a pause or cancel is seen at once. It continues as new every
 * `cyclesPerRun` cycles, so a ten-year subscription keeps a bounded history.
 */
export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<void> {
  const s: SubscriptionState = input.state ?? initialState(input);
  const useClock = input.testClockId !== null;
  const now = (): number => (useClock ? s.clockNow : Date.now());
  let view: SubscriptionView | undefined;
  let dirty = false;
  let collecting = false;
  let caughtUpTo = 0;
  let cyclesThisRun = 0;
  let retriesDone = 0;
  let writes: Promise<unknown> = Promise.resolve();

  const snapshot = (event: SubscriptionSnapshot['event'], at: number): SubscriptionSnapshot => ({
    subscriptionId: input.subscriptionId, accountId: input.accountId, livemode: input.livemode, customerId: input.customerId,
    planId: s.plan.id, billingCycle: input.billingCycle, autoCollection: input.autoCollection, daysUntilDue: input.daysUntilDue,
    taxJurisdiction: input.taxJurisdiction, testClockId: input.testClockId, card: s.card, metadata: input.metadata,
    status: s.status, trialEnd: s.trialEnd, periodStart: s.periodStart, periodEnd: s.periodEnd,
    nextInvoiceAt: s.status === 'canceled' || s.status === 'paused' || s.status === 'unpaid' ? null : s.periodEnd,
    cancelAtPeriodEnd: s.cancelAtPeriodEnd, canceledAt: s.canceledAt, pausedAt: s.pausedAt, resumesAt: s.resumesAt,
    version: ++s.version, createdAt: input.startAt, at, event, requestId: input.requestId,
  });

  /** Writes the row (and the event) in the order the changes happened: one write at a time. */
  const save = async (event: SubscriptionSnapshot['event'] = null, at = now()): Promise<SubscriptionView> => {
    const snap = snapshot(event, at);
    const write = writes.then(() => db.saveSubscription(snap));
    writes = write.catch(() => undefined);
    view = await write;
    return view;
  };

  const resume = (at: number): void => {
    const pausedFor = Math.max(0, at - (s.pausedAt ?? at));
    const before = s.statusBeforePause ?? 'active';
    // Paused time extends the period (and a trial): the customer pays for the time they had.
    s.anchor += pausedFor;
    if (before === 'trialing' && s.trialEnd !== null) {
      s.trialEnd += pausedFor;
      s.periodEnd = s.trialEnd;
    } else {
      s.periodEnd = periodEndAt(s.anchor, input.billingCycle, s.periodIndex);
    }
    if (s.dunning) s.dunning.nextRetryAt += pausedFor;
    s.status = before === 'past_due' && !s.dunning ? 'active' : before;
    s.statusBeforePause = null;
    s.pausedAt = null;
    s.resumesAt = null;
  };

  const cancel = (at: number): void => {
    s.status = 'canceled';
    s.canceledAt = at;
    s.dunning = null;
  };

  setHandler(subscriptionProgressQuery, () => ({ status: s.status, caughtUpTo, state: s, collecting }));
  setHandler(advanceClockSignal, ({ now: t }) => {
    if (t > s.clockNow) s.clockNow = t;
    dirty = true;
  });
  setHandler(awaitSubscriptionRecordedUpdate, async () => {
    await condition(() => view !== undefined);
    return view!;
  });

  setHandler(pauseSubscriptionUpdate, async ({ resumesAt }) => {
    s.statusBeforePause = s.status;
    s.status = 'paused';
    s.pausedAt = now();
    s.resumesAt = resumesAt;
    dirty = true;
    return save('subscription.paused');
  }, {
    validator: ({ resumesAt }) => {
      if (!(TRANSITIONS.pause as readonly string[]).includes(s.status)) throw invalidTransition(s.status, 'paused');
      if (resumesAt !== null && resumesAt <= now()) throw ApplicationFailure.nonRetryable('resumes_at must be in the future.', 'InvalidArgument');
    },
  });

  setHandler(resumeSubscriptionUpdate, async (_req) => {
    resume(now());
    dirty = true;
    return save('subscription.resumed');
  }, {
    validator: (_req) => {
      if (!(TRANSITIONS.resume as readonly string[]).includes(s.status)) throw invalidTransition(s.status, 'resumed');
    },
  });

  setHandler(cancelSubscriptionUpdate, async ({ atPeriodEnd }) => {
    dirty = true;
    if (atPeriodEnd && (s.status === 'trialing' || s.status === 'active' || s.status === 'past_due')) {
      s.cancelAtPeriodEnd = true;
      return save(null);
    }
    cancel(now());
    return save('subscription.canceled');
  }, {
    validator: (_req) => {
      if (!(TRANSITIONS.cancel as readonly string[]).includes(s.status)) throw invalidTransition(s.status, 'canceled');
    },
  });

  setHandler(changePlanUpdate, async ({ plan, prorate: withProration }) => {
    const t = now();
    if (withProration && s.status !== 'trialing' && input.billingCycle !== 'usage_based' && t < s.periodEnd) {
      const total = s.periodEnd - s.periodStart;
      const remaining = s.periodEnd - t;
      const credit = prorate(s.plan.amount, remaining, total);
      const charge = prorate(plan.amount, remaining, total);
      if (credit) s.pendingProrations.push({ description: `Unused time on ${s.plan.name}`, amount: -credit, period_start: t, period_end: s.periodEnd });
      if (charge) s.pendingProrations.push({ description: `Remaining time on ${plan.name}`, amount: charge, period_start: t, period_end: s.periodEnd });
    }
    s.plan = plan;
    return save(null);
  }, {
    validator: (_req) => {
      if (!(TRANSITIONS.changePlan as readonly string[]).includes(s.status)) throw invalidTransition(s.status, 'moved to another plan');
    },
  });

  setHandler(updatePaymentMethodUpdate, async ({ card, gateway }) => {
    s.card = card;
    s.gateway = gateway;
    return save(null);
  }, {
    validator: (_req) => {
      if (!(TRANSITIONS.updatePaymentMethod as readonly string[]).includes(s.status)) throw invalidTransition(s.status, 'given a new payment method');
    },
  });

  setHandler(retryCollectionUpdate, async () => {
    const before = retriesDone;
    s.dunning!.nextRetryAt = now();
    dirty = true;
    await condition(() => retriesDone > before || s.status === 'canceled');
    return { retried: true, status: s.status };
  }, {
    validator: () => {
      if (!s.dunning) throw invalidTransition(s.status, 'retried (no failed collection is pending)');
      if (s.status === 'paused') throw invalidTransition(s.status, 'retried while paused');
    },
  });

  /** One collection attempt through the payment workflow; true when the invoice is paid. */
  const collect = async (invoiceId: string, at: number): Promise<boolean> => {
    collecting = true;
    try {
      const plan = await db.prepareCollection({ accountId: input.accountId, livemode: input.livemode, invoiceId });
      if (plan.alreadyPaid) return true;
      const card = s.card;
      const gateway = s.gateway;
      if (!card || !gateway) {
        await db.recordCollection({ accountId: input.accountId, livemode: input.livemode, invoiceId, attempt: plan.attempt, paymentId: plan.paymentId, outcome: 'failed', failureCode: 'no_payment_method', at });
        return false;
      }
      let payment: PaymentView | null = null;
      try {
        payment = await executeChild<typeof paymentWorkflow>('paymentWorkflow', {
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
      collecting = false;
    }
  };

  const startDunning = (invoiceId: string, at: number): void => {
    if (s.dunning) {
      if (!s.dunning.invoiceIds.includes(invoiceId)) s.dunning.invoiceIds.push(invoiceId);
    } else {
      const first = s.plan.dunning.retry_schedule_days[0];
      s.dunning = { invoiceIds: [invoiceId], retry: 0, nextRetryAt: first === undefined ? at : at + first * DAY_MS };
    }
    if (s.status === 'active' || s.status === 'trialing') s.status = 'past_due';
    if (s.status === 'paused' && s.statusBeforePause === 'active') s.statusBeforePause = 'past_due';
  };

  const retryDunning = async (): Promise<void> => {
    const dunning = s.dunning!;
    const at = dunning.nextRetryAt;
    dunning.retry += 1;
    const unpaid: string[] = [];
    for (const invoiceId of dunning.invoiceIds) if (!(await collect(invoiceId, at))) unpaid.push(invoiceId);
    if (s.status === 'canceled') return;
    if (!unpaid.length) {
      s.dunning = null;
      if (s.status === 'past_due') s.status = 'active';
      await save(null, at);
      return;
    }
    dunning.invoiceIds = unpaid;
    const days = s.plan.dunning.retry_schedule_days;
    if (dunning.retry < days.length) {
      dunning.nextRetryAt = at + days[dunning.retry]! * DAY_MS;
      await save(null, at);
    } else if (s.plan.dunning.final_action === 'cancel') {
      await db.markUncollectible({ accountId: input.accountId, livemode: input.livemode, invoiceIds: unpaid });
      cancel(at);
      await save('subscription.canceled', at);
    } else {
      s.dunning = null;
      s.status = 'unpaid';
      await save(null, at);
    }
  };

  const closePeriod = async (): Promise<void> => {
    const at = s.periodEnd;
    if (s.status === 'trialing') {
      s.status = 'active';
      s.anchor = at;
      s.periodIndex = 1;
      s.periodStart = at;
      s.periodEnd = periodEndAt(s.anchor, input.billingCycle, 1);
      if (s.cancelAtPeriodEnd) {
        cancel(at);
        await save('subscription.canceled', at);
      } else {
        await save(null, at);
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
    cyclesThisRun += 1;
    s.periodIndex += 1;
    s.periodStart = s.periodEnd;
    s.periodEnd = periodEndAt(s.anchor, input.billingCycle, s.periodIndex);
    if (s.cancelAtPeriodEnd) cancel(at);
    await save(s.status === 'canceled' ? 'subscription.canceled' : null, at);
    if (invoice.status === 'open' && input.autoCollection && invoice.amount_due > 0) {
      if (!(await collect(invoice.id, at)) && s.status !== 'canceled') {
        startDunning(invoice.id, at);
        await save(null, at);
      }
    }
  };

  const nextEventAt = (): number => {
    if (s.status === 'canceled' || s.status === 'unpaid') return Infinity;
    if (s.status === 'paused') return s.resumesAt ?? Infinity;
    if (s.dunning && s.status === 'past_due') return Math.min(s.periodEnd, s.dunning.nextRetryAt);
    return s.periodEnd;
  };

  if (input.state) {
    s.runs += 1;
    view = await db.getSubscriptionView({ accountId: input.accountId, livemode: input.livemode, subscriptionId: input.subscriptionId });
  } else {
    await save('subscription.created', input.startAt);
  }

  while (s.status !== 'canceled') {
    // Checked between steps (also in the middle of a long clock advance), never while an update
    // is still running: the new run starts from the same state.
    if (cyclesThisRun >= input.cyclesPerRun || workflowInfo().continueAsNewSuggested) {
      await writes;
      if (allHandlersFinished() && (s.status as SubscriptionStatus) !== 'canceled') {
        await continueAsNew<typeof subscriptionWorkflow>({ ...input, state: s });
      }
    }
    const next = nextEventAt();
    if (now() >= next) {
      if (s.status === 'paused') {
        const at = s.resumesAt!;
        resume(at);
        await save('subscription.resumed', at);
      } else if (s.dunning && s.status === 'past_due' && s.dunning.nextRetryAt <= s.periodEnd) {
        await retryDunning();
        retriesDone += 1;
      } else {
        await closePeriod();
      }
      continue;
    }
    // Nothing is due at `t`: once the row writes are done, billing has caught up with it.
    const t = now();
    await writes;
    caughtUpTo = Math.max(caughtUpTo, t);
    dirty = false;
    if (useClock) await condition(() => dirty || s.clockNow >= next);
    else if (next === Infinity) await condition(() => dirty);
    else await condition(() => dirty, Math.max(1, next - Date.now()));
  }
  await writes;
  caughtUpTo = Number.MAX_SAFE_INTEGER;
  await condition(allHandlersFinished);
}
