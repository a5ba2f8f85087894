import { permissionScopes } from '../../domain/registry.ts';
import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';
import { advance, card, invoices, newClock, newCustomer, newPlan, subscription, type Http } from './support.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
const DECLINE = '4000000000000002';
const SLOW = '4000000000007775';

usePlatform({ worker: true, env: { SANDBOX_GATEWAY_SLOW_CARD_MS: '2500' } }, (t) => ({ platform, http, key, accountId } = t));

async function subscribe(plan: string, clock: string, number: string, extra: Record<string, unknown> = {}) {
  const customer = await newCustomer(http, key);
  const res = await http('/v3/subscriptions', { key, body: { customer_id: customer, plan_id: plan, auto_collection: true, payment_method: card(number), test_clock: clock, ...extra } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe('dunning', () => {
  it('a declined collection makes the subscription past_due; a retry with a new card succeeds and it is active again', async () => {
    const plan = await newPlan(http, key, { amount: 5000 });
    const clock = await newClock(http, key, '2025-03-01T00:00:00Z');
    const sub = await subscribe(plan.id, clock, DECLINE);

    await advance(http, key, clock, '2025-04-01T01:00:00Z');
    expect((await subscription(http, key, sub.id)).status).toBe('past_due');
    let [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'open', attempt_count: 1, amount_due: 5000, payment_method: 'visa **** 0002' });

    // First retry three days later (the documented schedule 3, 5, 7 days) fails too.
    await advance(http, key, clock, '2025-04-04T01:00:00Z');
    [inv] = await invoices(http, key, sub.id);
    expect(inv.attempt_count).toBe(2);
    expect((await subscription(http, key, sub.id)).status).toBe('past_due');

    // The customer gives a working card; the next retry (five days later) collects.
    const updated = await http(`/v3/subscriptions/${sub.id}`, { method: 'PATCH', key, body: { payment_method: card() } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.payment_method.card.last4).toBe('4242');
    await advance(http, key, clock, '2025-04-09T01:00:00Z');
    const after = await subscription(http, key, sub.id);
    expect(after.status).toBe('active');
    [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'paid', attempt_count: 3, amount_paid: 5000, amount_due: 0 });

    const events = await platform.sql<{ type: string }>(`select type from events where customer_id = $1 and type like 'invoice.%' order by id`, [sub.customer_id]);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.payment_failed', 'invoice.payment_failed', 'invoice.paid']);
    // The next period is collected normally with the new card.
    await advance(http, key, clock, '2025-05-01T01:00:00Z');
    const all = await invoices(http, key, sub.id);
    expect(all.map((i) => [i.status, i.attempt_count])).toEqual([['paid', 3], ['paid', 1]]);
  });

  it('after the last retry: canceled (invoice uncollectible) or unpaid, as the plan says; admin retry collects at once', async () => {
    const cancelPlan = await newPlan(http, key, { amount: 700, dunning: { retry_schedule_days: [1, 2], final_action: 'cancel' } });
    const unpaidPlan = await newPlan(http, key, { amount: 700, dunning: { retry_schedule_days: [1], final_action: 'unpaid' } });
    const clock = await newClock(http, key, '2025-03-01T00:00:00Z');
    const toCancel = await subscribe(cancelPlan.id, clock, DECLINE);
    const toUnpaid = await subscribe(unpaidPlan.id, clock, DECLINE);
    const rescued = await subscribe(cancelPlan.id, clock, DECLINE);

    await advance(http, key, clock, '2025-04-01T12:00:00Z');
    expect((await subscription(http, key, rescued.id)).status).toBe('past_due');
    // Admin: a new card, then retry now instead of waiting for the schedule.
    expect((await http(`/v3/subscriptions/${rescued.id}`, { method: 'PATCH', key, body: { payment_method: card('5555555555554444') } })).status).toBe(200);
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    const retried = await caller.billing.retryCollection({ accountId, livemode: false, subscriptionId: rescued.id });
    expect(retried).toEqual({ retried: true, status: 'active' });
    const described = await caller.billing.describeSubscription({ accountId, livemode: false, subscriptionId: rescued.id });
    expect(described.workflow).toMatchObject({ workflow_id: `subscription-${rescued.id}`, status: 'RUNNING' });
    expect(described.state).toMatchObject({ status: 'active', dunning: null, card: { brand: 'mastercard', last4: '4444' } });
    expect(JSON.stringify(described)).not.toContain('tok_');
    await expect(caller.billing.retryCollection({ accountId, livemode: false, subscriptionId: rescued.id })).rejects.toThrow(/cannot be retried/);

    await advance(http, key, clock, '2025-04-05T00:00:00Z');
    expect(await subscription(http, key, toCancel.id)).toMatchObject({ status: 'canceled', canceled_at: '2025-04-04T00:00:00.000Z' });
    expect((await invoices(http, key, toCancel.id)).map((i) => [i.status, i.attempt_count])).toEqual([['uncollectible', 3]]);
    expect((await subscription(http, key, toUnpaid.id)).status).toBe('unpaid');

    // Unpaid: no further invoices; canceled: none either.
    await advance(http, key, clock, '2025-06-05T00:00:00Z');
    expect(await invoices(http, key, toUnpaid.id)).toHaveLength(1);
    expect(await invoices(http, key, toCancel.id)).toHaveLength(1);
    expect(await invoices(http, key, rescued.id)).toHaveLength(3);
  });

  it('a pause while a collection is running: the charge completes once, and nothing more is invoiced while paused', async () => {
    const plan = await newPlan(http, key, { amount: 1200 });
    const clock = await newClock(http, key, '2025-03-01T00:00:00Z');
    const sub = await subscribe(plan.id, clock, SLOW);
    const handle = platform.temporal.client.workflow.getHandle(`subscription-${sub.id}`);

    const advancing = http(`/v3/test_clocks/${clock}/advance`, { key, body: { frozen_time: '2025-04-01T01:00:00Z' } });
    const deadline = Date.now() + 20_000;
    while (!(await handle.query<{ collecting: boolean }>('subscriptionProgress')).collecting) {
      if (Date.now() > deadline) throw new Error('the collection never started');
      await new Promise((r) => setTimeout(r, 50));
    }
    const paused = await http(`/v3/subscriptions/${sub.id}/pause`, { key, body: {} });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.status).toBe('paused');
    expect((await advancing).status).toBe(200);

    const [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'paid', attempt_count: 1 });
    expect((await subscription(http, key, sub.id)).status).toBe('paused');
    await advance(http, key, clock, '2025-07-01T00:00:00Z');
    expect(await invoices(http, key, sub.id)).toHaveLength(1);
    const charges = await platform.sql<{ n: number }>(`select count(*)::int as n from sandbox_gateway_charges where idempotency_key = $1`, [`${inv.last_payment_id}:charge`]);
    expect(charges[0]!.n).toBe(1);
  });
  it('the spec\'s body exactly (no payment method, no currency) starts a subscription in the plan\'s currency', async () => {
    const plan = await newPlan(http, key, { amount: 2900, currency: 'EUR' });
    const customer = await newCustomer(http, key);
    const res = await http('/v3/subscriptions', {
      key,
      body: { customer_id: customer, plan_id: plan.id, billing_cycle: 'monthly', auto_collection: true, trial_period_days: 14, metadata: { source: 'spec-example' } },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'trialing', customer_id: customer, plan_id: plan.id, billing_cycle: 'monthly', auto_collection: true, payment_method: null, metadata: { source: 'spec-example' } });
  });

  it('with no payment method the invoice waits open (past_due, no attempts burnt) until PATCH payment_method collects it', async () => {
    const plan = await newPlan(http, key, { amount: 1200, currency: 'EUR', dunning: { retry_schedule_days: [1, 2], final_action: 'cancel' } });
    const clock = await newClock(http, key, '2025-03-01T00:00:00Z');
    const customer = await newCustomer(http, key);
    const created = await http('/v3/subscriptions', { key, body: { customer_id: customer, plan_id: plan.id, auto_collection: true, test_clock: clock } });
    expect(created.status, created.text).toBe(201);
    const sub = created.body;

    await advance(http, key, clock, '2025-04-01T01:00:00Z');
    expect((await subscription(http, key, sub.id)).status).toBe('past_due');
    let [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'open', currency: 'EUR', amount_due: 1200, attempt_count: 0, payment_method: null, auto_collection: true });

    // Well past the whole retry schedule (1 + 2 days): nothing retried, not canceled, still open.
    await advance(http, key, clock, '2025-04-10T00:00:00Z');
    expect((await subscription(http, key, sub.id)).status).toBe('past_due');
    [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'open', attempt_count: 0 });
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    await expect(caller.billing.retryCollection({ accountId, livemode: false, subscriptionId: sub.id })).rejects.toThrow(/without a payment method/);

    const patched = await http(`/v3/subscriptions/${sub.id}`, { method: 'PATCH', key, body: { payment_method: card() } });
    expect(patched.status, patched.text).toBe(200);
    await advance(http, key, clock, '2025-04-10T01:00:00Z');
    expect((await subscription(http, key, sub.id)).status).toBe('active');
    [inv] = await invoices(http, key, sub.id);
    expect(inv).toMatchObject({ status: 'paid', attempt_count: 1, amount_paid: 1200 });
    const events = await platform.sql<{ type: string }>(`select type from events where customer_id = $1 and type like 'invoice.%' order by id`, [customer]);
    expect(events.map((e) => e.type)).toEqual(['invoice.created', 'invoice.paid']);
  });
});
