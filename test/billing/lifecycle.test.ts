import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { advance, card, invoices, newClock, newCustomer, newPlan, subscription, type Http } from './support.ts';
import { usePlatform } from '../support/use-platform.ts';
import { activitySteps } from '../support/histories.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ worker: true, env: { BILLING_CYCLES_PER_RUN: '5' } }, (t) => ({ platform, http, key } = t));

describe('a monthly subscription on a test clock', () => {
  it('trial, twelve paid monthly invoices, pause (no invoices), resume, cancel at period end', async () => {
    const customer = await newCustomer(http, key);
    const plan = await newPlan(http, key, { amount: 1999 });
    const clock = await newClock(http, key, '2025-01-10T12:00:00Z');

    const created = await http('/v3/subscriptions', {
      key,
      body: { customer_id: customer, plan_id: plan.id, billing_cycle: 'monthly', auto_collection: true, trial_period_days: 14, payment_method: card(), test_clock: clock, metadata: { team: 'a' } },
    });
    expect(created.status, created.text).toBe(201);
    const sub = created.body;
    expect(sub).toMatchObject({
      object: 'subscription', status: 'trialing', customer_id: customer, plan_id: plan.id, billing_cycle: 'monthly',
      trial_end: '2025-01-24T12:00:00.000Z', current_period_start: '2025-01-10T12:00:00.000Z', current_period_end: '2025-01-24T12:00:00.000Z',
      next_invoice_date: '2025-01-24T12:00:00.000Z', workflow_id: `subscription-${sub.id}`, test_clock: clock,
      payment_method: { type: 'card', card: { brand: 'visa', last4: '4242' } }, metadata: { team: 'a' },
    });
    expect(created.text).not.toContain('4242424242424242');
    // Its event carries the subscription exactly as the API answers it (the row its write returned).
    const [createdEvent] = await platform.sql<{ data: { object: unknown } }>(
      `select data from events where type = 'subscription.created' and customer_id = $1`, [customer]);
    expect(createdEvent!.data.object).toEqual(sub);

    // The trial ends: active, no invoice yet.
    await advance(http, key, clock, '2025-01-25T00:00:00Z');
    expect(await subscription(http, key, sub.id)).toMatchObject({ status: 'active', current_period_end: '2025-02-24T12:00:00.000Z' });
    expect(await invoices(http, key, sub.id)).toHaveLength(0);

    // A year: twelve invoices, each charged to the card.
    await advance(http, key, clock, '2026-01-25T00:00:00Z');
    const year = await invoices(http, key, sub.id);
    expect(year).toHaveLength(12);
    expect(year.map((i) => i.period_start.slice(0, 10))).toEqual([
      '2025-01-24', '2025-02-24', '2025-03-24', '2025-04-24', '2025-05-24', '2025-06-24',
      '2025-07-24', '2025-08-24', '2025-09-24', '2025-10-24', '2025-11-24', '2025-12-24',
    ]);
    for (const inv of year) {
      expect(inv).toMatchObject({ status: 'paid', amount: 1999, amount_paid: 1999, amount_due: 0, currency: 'USD', payment_method: 'visa **** 4242', customer_id: customer });
      expect(inv.line_items).toEqual([expect.objectContaining({ type: 'subscription', amount: 1999 })]);
    }
    const one = await http(`/v3/invoices/${year[0].id}`, { key });
    expect(one.status).toBe(200);
    expect(one.body.due_date).toBe('2025-02-24');
    // Exactly one gateway charge per invoice.
    const charges = await platform.sql<{ n: number }>(`select count(*)::int as n from sandbox_gateway_charges`);
    expect(charges[0]!.n).toBe(12);

    // Pause: nothing is invoiced while paused.
    const paused = await http(`/v3/subscriptions/${sub.id}/pause`, { key, body: {} });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.status).toBe('paused');
    const [pausedEvent] = await platform.sql<{ data: { object: unknown } }>(
      `select data from events where type = 'subscription.paused' and customer_id = $1`, [customer]);
    expect(pausedEvent!.data.object).toEqual(paused.body);
    const again = await http(`/v3/subscriptions/${sub.id}/pause`, { key, body: {} });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'paused' });
    await advance(http, key, clock, '2026-04-25T00:00:00Z');
    expect(await invoices(http, key, sub.id)).toHaveLength(12);

    // Resume: the 90 paused days extend the period (its end moves from 2026-02-24 by three months on the shifted anchor).
    const resumed = await http(`/v3/subscriptions/${sub.id}/resume`, { key, body: {} });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body.status).toBe('active');
    expect(resumed.body.current_period_end).toBe('2026-05-24T12:00:00.000Z');
    const notPaused = await http(`/v3/subscriptions/${sub.id}/resume`, { key, body: {} });
    expect(notPaused.status).toBe(409);
    expect(notPaused.body.detail).toContain('active');

    // Cancel at period end: one more invoice, then canceled.
    const canceling = await http(`/v3/subscriptions/${sub.id}/cancel`, { key, body: { at_period_end: true } });
    expect(canceling.status, canceling.text).toBe(200);
    expect(canceling.body).toMatchObject({ status: 'active', cancel_at_period_end: true });
    await advance(http, key, clock, '2026-06-01T00:00:00Z');
    const final = await subscription(http, key, sub.id);
    expect(final).toMatchObject({ status: 'canceled', canceled_at: '2026-05-24T12:00:00.000Z', next_invoice_date: null });
    const all = await invoices(http, key, sub.id);
    expect(all).toHaveLength(13);
    expect(all[12]).toMatchObject({ status: 'paid', period_start: '2026-01-24T12:00:00.000Z', period_end: '2026-05-24T12:00:00.000Z' });
    expect((await http(`/v3/subscriptions/${sub.id}/resume`, { key, body: {} })).body.code).toBe('invalid_state_transition');

    // Events, in order, once each.
    const events = await platform.sql<{ type: string; n: number }>(
      `select type, count(*)::int as n from events where customer_id = $1 group by type order by type`, [customer]);
    expect(Object.fromEntries(events.map((e) => [e.type, e.n]))).toMatchObject({
      'subscription.created': 1, 'subscription.paused': 1, 'subscription.resumed': 1, 'subscription.canceled': 1,
      'invoice.created': 13, 'invoice.paid': 13,
    });

    // Continue-as-new every 5 cycles kept the state: 13 cycles over at least 3 runs, one history each.
    const handle = platform.temporal.client.workflow.getHandle(`subscription-${sub.id}`);
    const desc = await handle.describe();
    expect(desc.status.name).toBe('COMPLETED');
    const runs = [];
    for await (const wf of platform.temporal.client.workflow.list({ query: `WorkflowId = 'subscription-${sub.id}'` })) runs.push(wf);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect((await handle.fetchHistory()).events!.length).toBeLessThan(400);
    // The first run wrote the new subscription with a local activity, inside its first task; a
    // continued run reads the row back (an activity) before anything else.
    const [first, second] = runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    const stepsOf = async (runId: string) => activitySteps(await platform.temporal.client.workflow.getHandle(`subscription-${sub.id}`, runId).fetchHistory());
    expect((await stepsOf(first!.runId))[0]).toEqual(['saveSubscription', 'local']);
    expect((await stepsOf(second!.runId))[0]).toEqual(['getSubscriptionView', 'activity']);

    // Paid invoices count toward the customer's lifetime value.
    const journey = await http(`/v3/customers/${customer}/journey`, { key });
    expect(journey.status).toBe(200);
    expect(journey.body.total_ltv).toBe(259.87);

    // Lists filter by customer and status.
    const list = await http(`/v3/subscriptions?customer_id=${customer}&status=canceled`, { key });
    expect(list.body.data.map((s: any) => s.id)).toEqual([sub.id]);
    expect((await http(`/v3/subscriptions?customer_id=${customer}&status=active`, { key })).body.data).toEqual([]);
  });
});

describe('a pause, resume or plan change whose answer was lost', () => {
  it('answers a retry with the same Idempotency-Key with 200 and the subscription, applies nothing twice, and still refuses other requests with 409', async () => {
    const customer = await newCustomer(http, key);
    const basic = await newPlan(http, key, { name: 'Basic', amount: 1000 });
    const pro = await newPlan(http, key, { name: 'Pro', amount: 3000 });
    const clock = await newClock(http, key, '2025-03-01T00:00:00Z');
    const created = await http('/v3/subscriptions', { key, body: { customer_id: customer, plan_id: basic.id, payment_method: card(), test_clock: clock } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    const events = async (type: string) => (await platform.sql(`select id from events where type = $1 and data->'object'->>'id' = $2`, [type, id])).length;
    const progress = () => platform.temporal.client.workflow.getHandle(created.body.workflow_id).query<{ state: { pendingProrations: unknown[] } }>('subscriptionProgress');
    /** The request applied, then the API died before its answer was stored: the idempotency record is gone. */
    const lose = (idem: string) => platform.sql('delete from idempotency_records where key = $1', [idem]);
    const send = (path: string, idem: string, body: Record<string, unknown> = {}, method?: 'PATCH') =>
      http(`/v3/subscriptions/${id}${path}`, { key, headers: { 'idempotency-key': idem }, body, ...(method ? { method } : {}) });

    // Plan change: applied once (one pair of proration items), the retry answers the same plan.
    await advance(http, key, clock, '2025-03-11T00:00:00Z');
    const changed = await send('', 'lost-plan', { plan_id: pro.id }, 'PATCH');
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.plan_id).toBe(pro.id);
    expect((await progress()).state.pendingProrations).toHaveLength(2);
    await lose('lost-plan');
    const planRetry = await send('', 'lost-plan', { plan_id: pro.id }, 'PATCH');
    expect(planRetry.status, planRetry.text).toBe(200);
    expect(planRetry.body).toMatchObject({ id, plan_id: pro.id, status: 'active' });
    expect((await progress()).state.pendingProrations).toHaveLength(2);

    // Pause.
    const paused = await send('/pause', 'lost-pause');
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.status).toBe('paused');
    await lose('lost-pause');
    const pauseRetry = await send('/pause', 'lost-pause');
    expect(pauseRetry.status, pauseRetry.text).toBe(200);
    expect(pauseRetry.body).toMatchObject({ id, status: 'paused', paused_at: paused.body.paused_at });
    const otherPause = await send('/pause', 'other-pause');
    expect(otherPause.status).toBe(409);
    expect(otherPause.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'paused' });
    expect(await events('subscription.paused')).toBe(1);
    // While paused, another plan change is refused; the applied one's retry still answers 200.
    const otherPlan = await send('', 'other-plan', { plan_id: basic.id }, 'PATCH');
    expect(otherPlan.status).toBe(409);
    expect(otherPlan.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'paused' });
    await lose('lost-plan');
    expect((await send('', 'lost-plan', { plan_id: pro.id }, 'PATCH')).status).toBe(200);

    // Resume.
    await advance(http, key, clock, '2025-03-21T00:00:00Z');
    const resumed = await send('/resume', 'lost-resume');
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body.status).toBe('active');
    await lose('lost-resume');
    const resumeRetry = await send('/resume', 'lost-resume');
    expect(resumeRetry.status, resumeRetry.text).toBe(200);
    // Applied once: the ten paused days moved the period end once (2025-04-01 → 2025-04-11).
    expect(resumeRetry.body).toMatchObject({ id, status: 'active', current_period_end: resumed.body.current_period_end });
    expect(resumed.body.current_period_end).toBe('2025-04-11T00:00:00.000Z');
    const otherResume = await send('/resume', 'other-resume');
    expect(otherResume.status).toBe(409);
    expect(otherResume.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'active' });
    expect(await events('subscription.resumed')).toBe(1);

    // Once canceled (the workflow has ended), a lost pause's retry still answers 200; another request gets 409.
    expect((await http(`/v3/subscriptions/${id}/cancel`, { key, body: {} })).body.status).toBe('canceled');
    await lose('lost-pause');
    const afterCancel = await send('/pause', 'lost-pause');
    expect(afterCancel.status, afterCancel.text).toBe(200);
    expect(afterCancel.body).toMatchObject({ id, status: 'canceled' });
    expect((await send('/pause', 'other-pause-2')).status).toBe(409);
  });
});
