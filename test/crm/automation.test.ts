import { describe, expect, it } from 'vitest';
import { conditionsMatch } from '../../domain/crm/automation.ts';
import { renderTemplate } from '../../domain/crm/actions.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { create, eventually, orderBody, useShopPlatform, type Shop } from '../commerce/support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({
  worker: true, products: [{ name: 'Gift box', sku: 'GIFT', price: 3000, inventory: { track_quantity: false } }],
}, (t) => ({ platform, http, key, shop } = t));

const placeOrder = async (quantity: number, customerId: string) => {
  const res = await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'GIFT', quantity }], { customer_id: customerId }) });
  expect(res.status).toBe(201);
  return res.body;
};
const eventOf = async (type: string, objectId: string) =>
  eventually(async () => (await platform.sql<{ id: string; dispatched: boolean }>(
    `select id, dispatched_at is not null as dispatched from events where type = $1 and data->'object'->>'id' = $2`, [type, objectId]))[0], 10_000, type);

describe('conditions and templates', () => {
  it('evaluates every operator against the event object', () => {
    const object = { total_amount: 6000, currency: 'USD', shipping_address: { country: 'DE' }, tags: ['vip'], note: 'gift wrap please' };
    expect(conditionsMatch([{ field: 'total_amount', operator: 'gte', value: 5000 }, { field: 'currency', operator: 'eq', value: 'USD' }], object)).toBe(true);
    expect(conditionsMatch([{ field: 'total_amount', operator: 'lt', value: 5000 }], object)).toBe(false);
    expect(conditionsMatch([{ field: 'shipping_address.country', operator: 'in', value: ['DE', 'AT'] }], object)).toBe(true);
    expect(conditionsMatch([{ field: 'tags', operator: 'contains', value: 'vip' }, { field: 'note', operator: 'contains', value: 'gift' }], object)).toBe(true);
    expect(conditionsMatch([{ field: 'coupon', operator: 'exists', value: false }, { field: 'currency', operator: 'neq', value: 'EUR' }], object)).toBe(true);
    expect(conditionsMatch([{ field: 'total_amount', operator: 'gt', value: '5000' }], object)).toBe(false); // no cross-type comparison
    expect(renderTemplate('Hi {{customer.name}}, order {{object.id}} ({{missing.x}})', { customer: { name: 'Ada' }, object: { id: 'ord_1' } })).toBe('Hi Ada, order ord_1 ()');
  });
});

/**
 * Each test has a buyer of its own and a rule for that buyer's big orders only, so that no test
 * depends on (or sees) the rules, tasks, segments and messages of another.
 */
async function buyerWithRule(): Promise<{ customerId: string; ruleId: string }> {
  const customerId = (await create(http, key, '/v3/customers', { email: `buyer-${Math.random().toString(36).slice(2)}@example.com`, name: 'Buyer' })).id;
  const res = await newRule(customerId);
  expect(res.status, res.text).toBe(201);
  return { customerId, ruleId: res.body.id };
}

const newRule = (customerId: string) => http('/v3/crm/tasks/automation', {
  key,
  body: {
    name: 'Big orders get a call',
    trigger: { event: 'order.created' },
    conditions: [{ field: 'total_amount', operator: 'gte', value: 5000 }, { field: 'customer_id', operator: 'eq', value: customerId }],
    actions: [
      { type: 'create_task', title: 'Call {{customer.name}} about {{object.id}}', priority: 'high', due_in_hours: 24, assignee: 'sales@example.com' },
      { type: 'add_segment', segment: 'big-spender' },
      { type: 'send_message', channel: 'sandbox_email', body: 'Thanks for order {{object.id}}, {{customer.name}}!' },
    ],
  },
});

describe('CRM automation rules, fired from the outbox as workflows', () => {
  it('creates a rule (201) and rejects unknown triggers and bad actions, naming each field', async () => {
    const res = await newRule('cus_unused');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ object: 'automation_rule', enabled: true, trigger: { event: 'order.created' } });
    expect(res.body.id).toMatch(/^arule_/);
    const bad = await http('/v3/crm/tasks/automation', {
      key, body: { name: 'x', trigger: { event: 'order.exploded' }, conditions: [{ field: 'a', operator: 'gt' }], actions: [{ type: 'fax', to: '1' }] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['actions.0.type', 'conditions.0.value', 'trigger.event']);
  });

  it('runs the actions for a matching event: a task, a segment (customer.updated) and a sandbox message', async () => {
    const { customerId, ruleId } = await buyerWithRule();
    const order = await placeOrder(2, customerId); // 60.00 ≥ 50.00
    const event = await eventOf('order.created', order.id);
    const workflowId = `crm-automation-${ruleId}-${event.id}`;
    const result = await eventually(async () => {
      try {
        return await platform.temporal.client.workflow.getHandle(workflowId).result();
      } catch {
        return null;
      }
    }, 20_000, 'the automation workflow');
    expect(result.map((r: { type: string; outcome: string }) => [r.type, r.outcome])).toEqual([['create_task', 'done'], ['add_segment', 'done'], ['send_message', 'done']]);
    const described = await platform.temporal.client.workflow.getHandle(workflowId).describe();
    expect(described.searchAttributes).toMatchObject({ BpResourceId: [ruleId], BpCustomerId: [customerId] });

    const tasks = await http(`/v3/crm/tasks?rule_id=${ruleId}`, { key });
    expect(tasks.body.data).toHaveLength(1);
    expect(tasks.body.data[0]).toMatchObject({
      object: 'task', status: 'open', priority: 'high', customer_id: customerId, title: `Call Buyer about ${order.id}`,
      assignee: 'sales@example.com', rule_id: ruleId, event_id: event.id,
    });
    expect(Date.parse(tasks.body.data[0].due_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const customer = await http(`/v3/customers/${customerId}`, { key });
    expect(customer.body.segments).toContain('big-spender');
    const updated = await platform.sql<{ data: any }>(`select data from events where type = 'customer.updated' and customer_id = $1`, [customerId]);
    expect(updated.some((e) => e.data.previous_attributes?.segments && !e.data.previous_attributes.segments.includes('big-spender'))).toBe(true);
    const messages = await http(`/v3/crm/messages?customer_id=${customerId}`, { key });
    expect(messages.body.data).toEqual([expect.objectContaining({
      channel: 'sandbox_email', recipient: customer.body.email, body: `Thanks for order ${order.id}, Buyer!`, status: 'sent',
      provider_message_id: expect.stringMatching(/^sbx_/),
    })]);
    const runs = await http(`/v3/crm/tasks/automation/${ruleId}/runs`, { key });
    expect(runs.body.data).toEqual([expect.objectContaining({ event_id: event.id, workflow_id: workflowId, status: 'completed' })]);
  });

  it('does not fire when the conditions do not hold, or when the rule is disabled', async () => {
    const { customerId, ruleId } = await buyerWithRule();
    const small = await placeOrder(1, customerId); // 30.00 < 50.00
    const smallEvent = await eventually(async () => {
      const e = await eventOf('order.created', small.id);
      return e.dispatched ? e : null;
    }, 20_000, 'dispatch of the small order');
    expect((await platform.sql('select 1 from crm_automation_runs where event_id = $1', [smallEvent.id]))).toHaveLength(0);

    const disabled = await http(`/v3/crm/tasks/automation/${ruleId}`, { key, method: 'PATCH', body: { enabled: false } });
    expect(disabled.body.enabled).toBe(false);
    expect((await http(`/v3/crm/tasks/automation/${ruleId}`, { key })).body).toEqual(disabled.body);
    const big = await placeOrder(3, customerId);
    const bigEvent = await eventually(async () => {
      const e = await eventOf('order.created', big.id);
      return e.dispatched ? e : null;
    }, 20_000, 'dispatch of the big order');
    expect((await platform.sql('select 1 from crm_automation_runs where event_id = $1', [bigEvent.id]))).toHaveLength(0);
    expect((await http(`/v3/crm/tasks?rule_id=${ruleId}`, { key })).body.data).toEqual([]);
  });

  it('lists and completes tasks; completing twice is 409', async () => {
    const manual = await create(http, key, '/v3/crm/tasks', { title: 'Send contract', customer_id: shop.customerId });
    const open = await http('/v3/crm/tasks?status=open', { key });
    expect(open.body.data.map((t: { id: string }) => t.id)).toContain(manual.id);
    const done = await http(`/v3/crm/tasks/${manual.id}/complete`, { key, method: 'POST' });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', completed_at: expect.any(String) });
    const again = await http(`/v3/crm/tasks/${manual.id}/complete`, { key, method: 'POST' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('invalid_state_transition');
    expect((await http('/v3/crm/tasks?status=completed', { key })).body.data.map((t: { id: string }) => t.id)).toEqual([manual.id]);
    expect((await http('/v3/crm/tasks/task_nope', { key })).status).toBe(404);
  });
});
