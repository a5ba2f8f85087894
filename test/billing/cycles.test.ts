import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { advance, card, invoices, newClock, newCustomer, newPlan, subscription, type Http } from './support.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ worker: true }, (t) => ({ platform, http, key } = t));

async function subscribe(body: Record<string, unknown>) {
  const customer = await newCustomer(http, key);
  const res = await http('/v3/subscriptions', { key, body: { customer_id: customer, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe('billing cycles', () => {
  it('quarterly and yearly periods on one clock; net terms without auto collection', async () => {
    const quarterly = await newPlan(http, key, { amount: 9000, interval: 'quarterly', currency: 'EUR' });
    const yearly = await newPlan(http, key, { amount: 100_000, interval: 'yearly', currency: 'JPY' });
    const clock = await newClock(http, key, '2025-01-31T08:00:00Z');
    const q = await subscribe({ plan_id: quarterly.id, billing_cycle: 'quarterly', auto_collection: true, payment_method: card(), test_clock: clock });
    const y = await subscribe({ plan_id: yearly.id, auto_collection: false, days_until_due: 14, test_clock: clock });
    expect(q.current_period_end).toBe('2025-04-30T08:00:00.000Z');
    expect(y).toMatchObject({ billing_cycle: 'yearly', current_period_end: '2026-01-31T08:00:00.000Z' });

    // One advance may move the clock at most two years; year 9999 would replay ~32,000 quarters.
    const tooFar = await http(`/v3/test_clocks/${clock}/advance`, { key, body: { frozen_time: '9999-01-01T00:00:00Z' } });
    expect(tooFar.status).toBe(422);
    expect(tooFar.body.errors).toEqual([{ path: 'frozen_time', message: expect.stringContaining('no later than 2027-01-31T08:00:00.000Z') }]);
    const justOver = await http(`/v3/test_clocks/${clock}/advance`, { key, body: { frozen_time: '2027-01-31T08:00:00.001Z' } });
    expect(justOver.status).toBe(422);
    expect(justOver.body.errors).toEqual([expect.objectContaining({ path: 'frozen_time' })]);
    expect((await http(`/v3/test_clocks/${clock}`, { key })).body).toMatchObject({ frozen_time: '2025-01-31T08:00:00.000Z', status: 'ready' });
    await advance(http, key, clock, '2026-02-01T00:00:00Z');
    await advance(http, key, clock, '2027-02-01T00:00:00Z');
    const qi = await invoices(http, key, q.id);
    expect(qi.map((i) => i.period_end.slice(0, 10))).toEqual(['2025-04-30', '2025-07-31', '2025-10-31', '2026-01-31', '2026-04-30', '2026-07-31', '2026-10-31', '2027-01-31']);
    expect(qi.every((i) => i.status === 'paid' && i.amount === 9000 && i.currency === 'EUR')).toBe(true);
    const yi = await invoices(http, key, y.id);
    expect(yi.map((i) => [i.period_end.slice(0, 10), i.status, i.amount, i.due_date, i.payment_method, i.attempt_count])).toEqual([
      ['2026-01-31', 'open', 100_000, '2026-02-14', null, 0],
      ['2027-01-31', 'open', 100_000, '2027-02-14', null, 0],
    ]);
    expect((await subscription(http, key, y.id)).status).toBe('active');
    // A mismatched cycle is refused, naming the plan's interval.
    const bad = await http('/v3/subscriptions', { key, body: { customer_id: q.customer_id, plan_id: yearly.id, billing_cycle: 'monthly', auto_collection: false } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'billing_cycle', message: expect.stringContaining('yearly') })]);
  });

  it('usage is summed into the invoice of the period it falls in, with graduated tiers and taxes rounded half-even', async () => {
    const tax = await http('/v3/tax_rates', { key, body: { jurisdiction: 'DE', name: 'USt', percentage: '19' } });
    expect(tax.status, tax.text).toBe(201);
    const plan = await newPlan(http, key, {
      amount: 1050, currency: 'EUR',
      usage: { metric_name: 'api_calls', unit_amount: '0', tiers: [{ up_to: 100, unit_amount: '2' }, { up_to: null, unit_amount: '0.5' }] },
    });
    const clock = await newClock(http, key, '2025-05-01T00:00:00Z');
    const sub = await subscribe({ plan_id: plan.id, auto_collection: true, payment_method: card(), test_clock: clock, tax_jurisdiction: 'DE' });

    const use = (quantity: number | string, timestamp?: string, idem?: string) => http('/v3/usage/records', {
      key, body: { subscription_id: sub.id, metric_name: 'api_calls', quantity, ...(timestamp ? { timestamp } : {}) },
      headers: idem ? { 'idempotency-key': idem } : {},
    });
    const first = await use(60, '2025-05-10T00:00:00Z', 'u1');
    expect(first.status).toBe(201);
    expect(first.body.quantity).toBe(60); // a number, as sent, not the column's decimal string
    const replay = await use(60, '2025-05-10T00:00:00Z', 'u1');
    expect(replay.status).toBe(201);
    expect((await use(50)).body.timestamp).toBe('2025-05-01T00:00:00.000Z'); // defaults to the clock's time
    expect((await use(7, '2025-06-02T00:00:00Z')).status).toBe(201); // next period
    await advance(http, key, clock, '2025-06-05T00:00:00Z');
    // Usage for an invoiced period is refused.
    const late = await use(1, '2025-05-20T00:00:00Z');
    expect(late.status).toBe(422);
    expect(late.body.errors[0].path).toBe('timestamp');
    await advance(http, key, clock, '2025-07-05T00:00:00Z');

    const [may, june] = await invoices(http, key, sub.id);
    // May: 1050 flat + 100 × 2 + 10 × 0.5 = 1255; 19 % per line: 199.5 → 200, 38, 0.95 → 1 = 239.
    expect(may.line_items.map((l: any) => [l.type, l.quantity, l.amount, l.tax_amounts[0].amount])).toEqual([
      ['subscription', '1', 1050, 200], ['usage', '100', 200, 38], ['usage', '10', 5, 1],
    ]);
    expect(may).toMatchObject({ subtotal: 1255, tax: 239, amount: 1494, status: 'paid' });
    expect(may.taxes).toEqual([{ tax_rate_id: tax.body.id, name: 'USt', jurisdiction: 'DE', percentage: '19', taxable_amount: 1255, amount: 239 }]);
    expect(june.line_items.map((l: any) => [l.type, l.quantity, l.amount])).toEqual([['subscription', '1', 1050], ['usage', '7', 14]]);
    expect(june).toMatchObject({ subtotal: 1064, tax: 203 }); // per line: 199.5 → 200, 2.66 → 3

    // An unknown metric, and any usage once canceled, are refused clearly.
    const unknown = await http('/v3/usage/records', { key, body: { subscription_id: sub.id, metric_name: 'gigabytes', quantity: 1 } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0]).toMatchObject({ path: 'metric_name', message: expect.stringContaining("meters 'api_calls'") });
    expect((await http(`/v3/subscriptions/${sub.id}/cancel`, { key, body: {} })).body.status).toBe('canceled');
    const afterCancel = await use(1);
    expect(afterCancel.status).toBe(409);
    expect(afterCancel.body).toMatchObject({ code: 'subscription_not_active', status: 409, subscription_status: 'canceled' });
    const noSub = await http('/v3/usage/records', { key, body: { subscription_id: 'sub_nope', metric_name: 'api_calls', quantity: 1 } });
    expect(noSub.status).toBe(422);
    expect(noSub.body.errors).toEqual([expect.objectContaining({ path: 'subscription_id' })]);
  });

  it('a plan change mid-period is prorated on the next invoice', async () => {
    const basic = await newPlan(http, key, { amount: 3000, name: 'Basic' });
    const pro = await newPlan(http, key, { amount: 6000, name: 'Pro' });
    const other = await newPlan(http, key, { amount: 6000, currency: 'GBP' });
    const clock = await newClock(http, key, '2025-04-01T00:00:00Z');
    const sub = await subscribe({ plan_id: basic.id, auto_collection: true, payment_method: card(), test_clock: clock });
    await advance(http, key, clock, '2025-04-16T00:00:00Z'); // half of a 30-day period left
    const changed = await http(`/v3/subscriptions/${sub.id}`, { method: 'PATCH', key, body: { plan_id: pro.id } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.plan_id).toBe(pro.id);
    const wrongCurrency = await http(`/v3/subscriptions/${sub.id}`, { method: 'PATCH', key, body: { plan_id: other.id } });
    expect(wrongCurrency.status).toBe(422);
    expect(wrongCurrency.body.errors).toEqual([expect.objectContaining({ path: 'plan_id', message: expect.stringContaining('GBP') })]);
    await advance(http, key, clock, '2025-05-02T00:00:00Z');
    const [inv] = await invoices(http, key, sub.id);
    expect(inv.line_items.map((l: any) => [l.type, l.amount])).toEqual([['subscription', 6000], ['proration', -1500], ['proration', 3000]]);
    expect(inv).toMatchObject({ amount: 7500, status: 'paid' });
  });

  it('permissions, modes and search attributes', async () => {
    const plan = await newPlan(http, key, { amount: 100 });
    const readOnly = await platform.newKey({ type: 'restricted', mode: 'test', permissions: ['billing:read'] });
    const denied = await http('/v3/plans', { key: readOnly, body: { name: 'X', currency: 'USD', interval: 'monthly', amount: 1 } });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toContain('billing:write');
    const read = await http(`/v3/plans/${plan.id}`, { key: readOnly });
    expect([read.status, read.body.id]).toEqual([200, plan.id]);
    const noBilling = await platform.newKey({ type: 'restricted', mode: 'test', permissions: ['crm:read'] });
    const noInvoices = await http('/v3/invoices', { key: noBilling });
    expect([noInvoices.status, noInvoices.body.code, noInvoices.body.required_permission]).toEqual([403, 'permission_denied', 'billing:read']);

    // Live keys: no test clocks, and the sandbox's plans are not visible.
    const live = await platform.newKey({ type: 'live' });
    const liveClock = await http('/v3/test_clocks', { key: live, body: { frozen_time: '2025-01-01T00:00:00Z' } });
    expect(liveClock.status).toBe(403);
    expect(liveClock.body.code).toBe('test_mode_only');
    const hidden = await http(`/v3/plans/${plan.id}`, { key: live });
    expect([hidden.status, hidden.body.code]).toEqual([404, 'not_found']);

    // Ops find a customer's subscription in the Temporal UI by its search attributes.
    const sub = await subscribe({ plan_id: plan.id, auto_collection: false });
    const desc = await platform.temporal.client.workflow.getHandle(sub.workflow_id).describe();
    expect(desc.taskQueue).toBe(platform.temporal.taskQueue('billing'));
    expect(desc.searchAttributes).toMatchObject({ BpCustomerId: [sub.customer_id], BpResourceId: [sub.id], BpMode: ['test'] });
    // A wall-clock subscription: next invoice a month out, and 409 for an impossible transition.
    expect(Date.parse(sub.current_period_end) - Date.parse(sub.current_period_start)).toBeGreaterThan(27 * 86_400_000);
    expect((await http(`/v3/subscriptions/${sub.id}/resume`, { key, body: {} })).body).toMatchObject({ status: 409, code: 'invalid_state_transition', current_state: 'active' });
    expect((await http(`/v3/subscriptions/${sub.id}/cancel`, { key, body: {} })).body.status).toBe('canceled');
  });
});
