import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { conflict, validationFailed, type ApiError, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import {
  advanceClockSignal, awaitSubscriptionRecordedUpdate, cancelSubscriptionUpdate, changePlanUpdate,
  pauseSubscriptionUpdate, resumeSubscriptionUpdate, retryCollectionUpdate, updatePaymentMethodUpdate, subscriptionProgressQuery, subscriptionWorkflowId,
  type AppliedChange, type BillingCycle, type SubscriptionProgress, type SubscriptionView, type SubscriptionWorkflowInput,
} from '../../workflows/billing/shared.ts';
import type { subscriptionWorkflow } from '../../workflows/billing/subscription.ts';
import { checkCustomers } from '../customers/public.ts';
import { tokenizeForSaving, type CardInput, type CardOnFile, type PaymentGateways, type PaymentsContext } from '../payments/public.ts';
import type { Scope } from '../scope.ts';
import { BillingPlan, Subscription, TestClock } from './entities.ts';
import {
  beginAdvance, findPlan, findSubscription, findTestClock, finishAdvance, planSnapshot, requireSandbox, subscriptionView,
  type TestClockView,
} from './service.ts';

/**
 * Subscriptions through their workflows: the API never writes a subscription row itself. Creation
 * is update-with-start (the workflow's first activity writes the row; the API answers once it is
 * there), every change is an update with a validator (a refused transition becomes 409).
 */
export interface BillingContext {
  em: EntityManager;
  temporal: TemporalHandle;
  gateways: PaymentGateways;
  /** Continue-as-new after this many cycles. */
  cyclesPerRun: number;
}

/** What talking to an existing subscription's workflow needs (the admin API has no gateways). */
export type WorkflowContext = Pick<BillingContext, 'em' | 'temporal'>;

export interface CreateSubscriptionInput {
  customerId: string;
  planId: string;
  billingCycle: BillingCycle | null;
  autoCollection: boolean;
  trialPeriodDays: number;
  daysUntilDue: number;
  taxJurisdiction: string | null;
  testClockId: string | null;
  card: CardInput | null;
  metadata: Record<string, string>;
  requestId: string | null;
  /**
   * The new subscription's id (`ctx.resourceId`: the same for every retry with one Idempotency-Key).
   * A subscription with this id that exists already is the answer: an earlier attempt created it.
   */
  subscriptionId?: string;
}

export async function createSubscription(ctx: BillingContext, scope: Scope, input: CreateSubscriptionInput): Promise<SubscriptionView> {
  if (input.subscriptionId) {
    const existing = await ctx.em.findOne(Subscription, { id: input.subscriptionId });
    if (existing) return subscriptionView(existing);
  }
  const errors: FieldError[] = await checkCustomers(ctx.em, [['customer_id', input.customerId]]);
  const plan = await ctx.em.findOne(BillingPlan, { id: input.planId });
  if (!plan) errors.push({ path: 'plan_id', message: `no plan with id '${input.planId}' exists in this account and mode` });
  const cycle: BillingCycle = input.billingCycle ?? plan?.interval ?? 'monthly';
  if (plan) {
    if (cycle === 'usage_based' && !plan.usage) errors.push({ path: 'billing_cycle', message: `usage_based needs a plan with usage pricing; plan ${plan.id} has none` });
    if (cycle !== 'usage_based' && cycle !== plan.interval) {
      errors.push({ path: 'billing_cycle', message: `plan ${plan.id} is priced ${plan.interval}; use billing_cycle "${plan.interval}" (or "usage_based" for a usage-priced plan)` });
    }
  }
  let startAt = Date.now();
  if (input.testClockId) {
    requireSandbox(scope);
    const clock = await ctx.em.findOne(TestClock, { id: input.testClockId });
    if (!clock) errors.push({ path: 'test_clock', message: `no test clock with id '${input.testClockId}' exists in this account` });
    else startAt = clock.frozenTime.getTime();
  }
  if (errors.length) throw validationFailed(errors);

  let card: CardOnFile | null = null;
  let gateway: SubscriptionWorkflowInput['gateway'] = null;
  if (input.card) {
    // Routed like a payment of the plan's price (rules, failover before any charge); the card's charges go where it was tokenised.
    const payments: PaymentsContext = { em: ctx.em, temporal: ctx.temporal, gateways: ctx.gateways, waitMs: 0 };
    const routed = await tokenizeForSaving(payments, scope, input.card, { currency: plan!.currency, amount: plan!.amount });
    gateway = routed.gateway;
    card = routed.onFile;
  }
  const subscriptionId = input.subscriptionId ?? newId('subscription');
  const workflowInput: SubscriptionWorkflowInput = {
    subscriptionId, accountId: scope.accountId, livemode: scope.livemode, customerId: input.customerId, plan: planSnapshot(plan!),
    billingCycle: cycle, autoCollection: input.autoCollection, daysUntilDue: input.daysUntilDue, trialPeriodDays: input.trialPeriodDays,
    taxJurisdiction: input.taxJurisdiction, card, gateway, testClockId: input.testClockId, startAt, metadata: input.metadata,
    paymentsTaskQueue: ctx.temporal.taskQueue('payments'), cyclesPerRun: ctx.cyclesPerRun, requestId: input.requestId,
  };
  return startResource<typeof subscriptionWorkflow, SubscriptionView, []>(ctx.temporal, {
    workflowType: 'subscriptionWorkflow',
    workflowId: subscriptionWorkflowId(subscriptionId),
    taskQueue: ctx.temporal.taskQueue('billing'),
    args: [workflowInput],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: input.customerId, resourceId: subscriptionId }),
    update: awaitSubscriptionRecordedUpdate,
    updateArgs: [],
  });
}

const SUGGESTION = 'Check the subscription\'s current status (GET /v3/subscriptions/{id}) and send an action that status allows.';

function invalidTransition(status: string, detail: string): ApiError {
  return conflict('invalid_state_transition', detail, SUGGESTION, { current_state: status });
}

/**
 * Sends an update to the subscription's workflow; a refusal by its validator becomes its problem (409
 * for a transition). `retryOf`: the change and the request's Idempotency-Key, so that a retry of a
 * change the request applied before the subscription was canceled (its workflow has finished and
 * takes no update) still answers the subscription, like the workflow itself does while it runs.
 */
async function update<T>(ctx: WorkflowContext, id: string, send: (h: WorkflowHandle<typeof subscriptionWorkflow>) => Promise<T>): Promise<T>;
async function update(
  ctx: WorkflowContext, id: string, send: (h: WorkflowHandle<typeof subscriptionWorkflow>) => Promise<SubscriptionView>,
  retryOf: { change: AppliedChange; key: string | null },
): Promise<SubscriptionView>;
async function update<T>(
  ctx: WorkflowContext, id: string, send: (h: WorkflowHandle<typeof subscriptionWorkflow>) => Promise<T>,
  retryOf?: { change: AppliedChange; key: string | null },
): Promise<T | SubscriptionView> {
  const sub = await findSubscription(ctx.em, id);
  if (sub.status === 'canceled') {
    if (retryOf?.key) {
      const progress = await ctx.temporal.client.workflow.getHandle(sub.workflowId).query(subscriptionProgressQuery);
      if ((progress.state.appliedBy ?? []).some((a) => a.change === retryOf.change && a.key === retryOf.key)) return subscriptionView(sub);
    }
    throw invalidTransition('canceled', `Subscription ${id} is canceled; it cannot change any more.`);
  }
  const handle = ctx.temporal.client.workflow.getHandle<typeof subscriptionWorkflow>(sub.workflowId);
  return sendUpdate(() => send(handle), {
    resource: `Subscription ${id}`,
    suggestion: SUGGESTION,
    currentState: async () => (await findSubscription(ctx.em.fork(), id)).status,
  });
}

/**
 * Pause, resume and plan change: a retry with the Idempotency-Key of the request that applied the
 * change (its answer was lost, e.g. the API died before storing it) answers the subscription with
 * 200, not 409, and applies nothing twice: the workflow remembers the keys of the requests that
 * applied its latest changes (`appliedBy`). Another request in a state that does not allow the
 * change still gets 409.
 */
export function pauseSubscription(
  ctx: BillingContext, id: string, resumesAt: Date | null, requestId: string | null, idempotencyKey: string | null = null,
): Promise<SubscriptionView> {
  return update(ctx, id, (h) => h.executeUpdate(pauseSubscriptionUpdate, { args: [{ resumesAt: resumesAt?.getTime() ?? null, requestId, idempotencyKey }] }),
    { change: 'pause', key: idempotencyKey });
}
export function resumeSubscription(ctx: BillingContext, id: string, requestId: string | null, idempotencyKey: string | null = null): Promise<SubscriptionView> {
  return update(ctx, id, (h) => h.executeUpdate(resumeSubscriptionUpdate, { args: [{ requestId, idempotencyKey }] }), { change: 'resume', key: idempotencyKey });
}
/**
 * Cancels now or at the period end. A retry with the Idempotency-Key of the request that canceled
 * it (its answer was lost, e.g. the API died before storing it) answers the canceled subscription,
 * not 409: the workflow keeps that key (`canceledBy`), and can be asked even once it has finished.
 */
export async function cancelSubscription(
  ctx: BillingContext, id: string, atPeriodEnd: boolean, requestId: string | null, idempotencyKey: string | null = null,
): Promise<SubscriptionView> {
  if (idempotencyKey) {
    const sub = await findSubscription(ctx.em, id);
    if (sub.status === 'canceled') {
      const progress = await ctx.temporal.client.workflow.getHandle(sub.workflowId).query(subscriptionProgressQuery);
      if (progress.state.canceledBy === idempotencyKey) return subscriptionView(sub);
    }
  }
  return update(ctx, id, (h) => h.executeUpdate(cancelSubscriptionUpdate, { args: [{ atPeriodEnd, requestId, idempotencyKey }] }));
}
export async function changeSubscriptionPlan(
  ctx: BillingContext, id: string, planId: string, prorate: boolean, requestId: string | null, idempotencyKey: string | null = null,
): Promise<SubscriptionView> {
  const sub = await findSubscription(ctx.em, id);
  const plan = await ctx.em.findOne(BillingPlan, { id: planId });
  if (!plan) throw validationFailed([{ path: 'plan_id', message: `no plan with id '${planId}' exists in this account and mode` }]);
  const current = await findPlan(ctx.em, sub.planId);
  const errors: FieldError[] = [];
  if (plan.currency !== current.currency) errors.push({ path: 'plan_id', message: `plan ${plan.id} is in ${plan.currency}; the subscription bills in ${current.currency}` });
  if (sub.billingCycle !== 'usage_based' && plan.interval !== sub.billingCycle) errors.push({ path: 'plan_id', message: `plan ${plan.id} is priced ${plan.interval}; the subscription bills ${sub.billingCycle}` });
  if (sub.billingCycle === 'usage_based' && !plan.usage) errors.push({ path: 'plan_id', message: `plan ${plan.id} has no usage pricing` });
  if (errors.length) throw validationFailed(errors);
  return update(ctx, id, (h) => h.executeUpdate(changePlanUpdate, { args: [{ plan: planSnapshot(plan), prorate, requestId, idempotencyKey }] }),
    { change: 'changePlan', key: idempotencyKey });
}
/** Replaces the card collections charge: tokenized here, only the token reaches the workflow. */
export async function updatePaymentMethod(ctx: BillingContext, scope: Scope, id: string, card: CardInput, requestId: string | null): Promise<SubscriptionView> {
  const sub = await findSubscription(ctx.em, id);
  const plan = await findPlan(ctx.em, sub.planId);
  const payments: PaymentsContext = { em: ctx.em, temporal: ctx.temporal, gateways: ctx.gateways, waitMs: 0 };
  const { gateway, onFile } = await tokenizeForSaving(payments, scope, card, { currency: plan.currency, amount: plan.amount });
  return update(ctx, id, (h) => h.executeUpdate(updatePaymentMethodUpdate, { args: [{ card: onFile, gateway, requestId }] }));
}

export function retryCollection(ctx: WorkflowContext, id: string): Promise<{ retried: boolean; status: string }> {
  return update(ctx, id, (h) => h.executeUpdate(retryCollectionUpdate, { args: [] }));
}

/** The workflow's own view of a subscription (admin): status, state, and whether a collection runs. */
export async function describeSubscriptionWorkflow(ctx: WorkflowContext, id: string) {
  const sub = await findSubscription(ctx.em, id);
  const handle = ctx.temporal.client.workflow.getHandle(sub.workflowId);
  const description = await handle.describe();
  const progress: SubscriptionProgress = await handle.query(subscriptionProgressQuery);
  return {
    subscription: subscriptionView(sub),
    workflow: {
      workflow_id: description.workflowId, run_id: description.runId, status: description.status.name, task_queue: description.taskQueue,
      history_length: description.historyLength, started_at: description.startTime.toISOString(),
    },
    // The gateway token stays out of admin output; brand and last4 are enough to recognise the card.
    state: { ...progress.state, card: progress.state.card ? { brand: progress.state.card.brand, last4: progress.state.card.last4 } : null },
    collecting: progress.collecting,
  };
}

/**
 * Moves a test clock forward: every subscription on it is signalled with the new time, and the
 * call returns once each has processed everything due up to it (polling its progress query),
 * or after `maxWaitMs` with the clock still `advancing`.
 */
export async function advanceTestClock(ctx: BillingContext, scope: Scope, id: string, to: Date, maxWaitMs = 55_000): Promise<TestClockView> {
  requireSandbox(scope);
  await findTestClock(ctx.em, id);
  const { clock, subscriptions } = await beginAdvance(ctx.em.fork(), id, to);
  const target = to.getTime();
  const deadline = Date.now() + maxWaitMs;
  let complete = true;
  await Promise.all(subscriptions.map(async (subId) => {
    const handle = ctx.temporal.client.workflow.getHandle(subscriptionWorkflowId(subId));
    try {
      await handle.signal(advanceClockSignal, { now: target });
      for (;;) {
        const p = await handle.query(subscriptionProgressQuery);
        if (p.caughtUpTo >= target) return;
        if (Date.now() > deadline) {
          complete = false;
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return; // finished (canceled) between the read and the signal
      throw err;
    }
  }));
  return complete ? finishAdvance(ctx.em.fork(), id) : clock;
}
