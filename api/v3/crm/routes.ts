import { z } from 'zod';
import { customerJourney, LIFECYCLE_STAGES } from '../../../domain/crm/journey.ts';
import { listMessages } from '../../../domain/crm/actions.ts';
import { createRule, listRules, readRule, listRuns, updateRule } from '../../../domain/crm/automation.ts';
import {
  CONDITION_OPERATORS, INTERACTION_DIRECTIONS, INTERACTION_TYPES, MESSAGE_CHANNELS, TASK_PRIORITIES, TASK_STATUSES,
} from '../../../domain/crm/entities.ts';
import { listInteractions, recordInteraction, recordTouchpoint } from '../../../domain/crm/interactions.ts';
import { completeTask, createTask, listTasks, readTask } from '../../../domain/crm/tasks.ts';
import { csv, currency, jsonValue, metadata } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import type { AreaContext } from '../../../platform/area.ts';

const timestamp = z.iso.datetime({ offset: true }).transform((v) => new Date(v)).describe('ISO 8601 timestamp; default now.');

// ---- Journey, interactions, touchpoints -------------------------------------------------------

const journeySchema = z
  .object({
    object: z.literal('customer_journey'),
    livemode: z.boolean(),
    customer_id: z.string(),
    lifecycle_stage: z.enum(LIFECYCLE_STAGES),
    total_ltv: z.number().describe('Decimal major units of `currency`: paid orders plus paid invoices.'),
    currency: z.string(),
    engagement_score: z.number().describe('0–100; see docs/crm.md for the formula.'),
    touchpoints: z.array(z.object({
      timestamp: z.iso.datetime(),
      type: z.string(),
      source: z.string().nullable(),
      amount: z.number().optional(),
      currency: z.string().optional(),
      direction: z.enum(INTERACTION_DIRECTIONS).optional(),
      ref: z.string(),
    })),
    summary: z.object({
      touchpoints: z.number().int(), purchases: z.number().int(), paid_orders_and_invoices: z.number().int(), interactions: z.number().int(),
      first_seen_at: z.iso.datetime().nullable(), last_seen_at: z.iso.datetime().nullable(),
    }),
    unconverted: z.array(z.object({ currency: z.string(), amount: z.number().int() })),
    computed_at: z.iso.datetime(),
  })
  .meta({ id: 'CustomerJourney' });

const interactionSchema = z
  .object({
    id: z.string(), object: z.literal('interaction'), livemode: z.boolean(), customer_id: z.string(),
    type: z.enum(INTERACTION_TYPES), direction: z.enum(INTERACTION_DIRECTIONS), subject: z.string().nullable(), notes: z.string().nullable(),
    occurred_at: z.iso.datetime(), metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(),
  })
  .meta({ id: 'Interaction' });

const touchpointSchema = z
  .object({
    id: z.string(), object: z.literal('touchpoint'), livemode: z.boolean(), customer_id: z.string(), type: z.string(),
    source: z.string().nullable(), url: z.string().nullable(), occurred_at: z.iso.datetime(), metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Touchpoint' });

const customerId = z.strictObject({ customer_id: z.string().min(1).max(64) });

const journeyRoutes = [
  route({
    method: 'get', path: '/v3/customers/{customer_id}/journey', operationId: 'getCustomerJourney', tag: 'Customers',
    summary: 'The customer journey: touchpoints, lifecycle stage, lifetime value, engagement score', permission: 'crm:read', status: 200,
    params: customerId,
    query: z.strictObject({
      currency: currency.optional().describe("Currency of total_ltv; default: that of the customer's latest paid order or invoice, else USD."),
      touchpoints_limit: z.coerce.number().int().min(0).max(500).default(100).describe('Most recent touchpoints returned (oldest first).'),
    }),
    response: journeySchema,
    async handler({ em, params, query }) {
      return { body: await customerJourney(em(), params.customer_id, { currency: query.currency, touchpointLimit: query.touchpoints_limit }) };
    },
  }),
  route({
    method: 'post', path: '/v3/customers/{customer_id}/interactions', operationId: 'recordInteraction', tag: 'Customers',
    summary: 'Record an interaction (call, email, meeting, chat, support ticket); records customer.updated', permission: 'crm:write', status: 201,
    params: customerId,
    body: z.strictObject({
      type: z.enum(INTERACTION_TYPES),
      direction: z.enum(INTERACTION_DIRECTIONS),
      notes: z.string().max(10_000).optional(),
      subject: z.string().max(300).optional(),
      occurred_at: timestamp.optional(),
      metadata: metadata.optional(),
    }),
    response: interactionSchema,
    async handler({ em, auth, params, body, requestId }) {
      const interaction = await recordInteraction(em(), auth, params.customer_id, body, requestId);
      return { body: interaction, headers: { Location: `/v3/customers/${params.customer_id}/interactions` } };
    },
  }),
  listRoute({
    path: '/v3/customers/{customer_id}/interactions', operationId: 'listInteractions', tag: 'Customers',
    summary: "List a customer's interactions", permission: 'crm:read',
    params: customerId,
    query: z.strictObject({ ...listQuery, type: csv(z.enum(INTERACTION_TYPES)).optional(), direction: csv(z.enum(INTERACTION_DIRECTIONS)).optional() }),
    item: interactionSchema,
    list: ({ em, params, query }, page) => listInteractions(em(), params.customer_id, query, page),
  }),
  route({
    method: 'post', path: '/v3/customers/{customer_id}/touchpoints', operationId: 'recordTouchpoint', tag: 'Customers',
    summary: 'Record a visit or other touchpoint (website_visit, ad_click, …); records customer.updated', permission: 'crm:write', status: 201,
    params: customerId,
    body: z.strictObject({
      type: z.string().regex(/^[a-z][a-z0-9_]{1,39}$/, 'snake_case such as website_visit, ad_click, email_open').default('website_visit'),
      source: z.string().max(100).optional().describe('e.g. google, newsletter, direct'),
      url: z.url().max(2000).optional(),
      occurred_at: timestamp.optional(),
      metadata: metadata.optional(),
    }),
    response: touchpointSchema,
    async handler({ em, auth, params, body, requestId }) {
      return { body: await recordTouchpoint(em(), auth, params.customer_id, body, requestId) };
    },
  }),
];

// ---- Automation rules, runs, tasks, messages -------------------------------------------------

const condition = z.strictObject({
  field: z.string().min(1).max(200).regex(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/, 'a dotted path into the event object, e.g. total_amount or shipping_address.country'),
  operator: z.enum(CONDITION_OPERATORS),
  value: jsonValue.optional(),
}).refine((c) => c.operator === 'exists' || c.value !== undefined, { path: ['value'], message: 'this operator compares with a value' })
  .refine((c) => c.operator !== 'in' || Array.isArray(c.value), { path: ['value'], message: '`in` takes an array' });

const action = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('create_task'),
    title: z.string().trim().min(1).max(300).describe('May use {{customer.name}}, {{event.type}}, {{object.<field>}}.'),
    description: z.string().max(5000).optional(),
    priority: z.enum(TASK_PRIORITIES).optional(),
    assignee: z.string().max(200).optional(),
    due_in_hours: z.number().min(0).max(24 * 365).optional(),
  }),
  z.strictObject({ type: z.literal('add_segment'), segment: z.string().trim().min(1).max(64) }),
  z.strictObject({
    type: z.literal('send_message'),
    channel: z.enum(MESSAGE_CHANNELS),
    body: z.string().min(1).max(2000).describe('May use {{customer.name}}, {{event.type}}, {{object.<field>}}.'),
  }),
]);

const ruleSchema = z
  .object({
    id: z.string(), object: z.literal('automation_rule'), livemode: z.boolean(), name: z.string(),
    trigger: z.object({ event: z.string() }), conditions: z.array(z.unknown()), actions: z.array(z.unknown()),
    enabled: z.boolean(), metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
  })
  .meta({ id: 'AutomationRule' });

const runSchema = z.object({
  id: z.string(), object: z.literal('automation_run'), livemode: z.boolean(), rule_id: z.string(), event_id: z.string(),
  workflow_id: z.string(), status: z.enum(['running', 'completed', 'failed']),
  results: z.array(z.object({ type: z.string(), ref: z.string().nullable(), outcome: z.enum(['done', 'skipped']), detail: z.string().optional() })),
  created_at: z.iso.datetime(), completed_at: z.iso.datetime().nullable(),
}).meta({ id: 'AutomationRun' });

const taskSchema = z
  .object({
    id: z.string(), object: z.literal('task'), livemode: z.boolean(), customer_id: z.string().nullable(), title: z.string(),
    description: z.string().nullable(), status: z.enum(TASK_STATUSES), priority: z.enum(TASK_PRIORITIES), assignee: z.string().nullable(),
    due_at: z.iso.datetime().nullable(), rule_id: z.string().nullable(), event_id: z.string().nullable(),
    completed_at: z.iso.datetime().nullable(), metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(), updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Task' });

const messageSchema = z.object({
  id: z.string(), object: z.literal('message'), livemode: z.boolean(), customer_id: z.string().nullable(), channel: z.string(),
  recipient: z.string(), body: z.string(), status: z.string(), provider_message_id: z.string(), created_at: z.iso.datetime(),
}).meta({ id: 'SandboxMessage' });

const ruleId = z.strictObject({ rule_id: z.string().min(1).max(64) });
const taskId = z.strictObject({ task_id: z.string().min(1).max(64) });

const automationRoutes = (eventTypes: readonly string[]) => [
  route({
    method: 'post', path: '/v3/crm/tasks/automation', operationId: 'createAutomationRule', tag: 'CRM',
    summary: 'Create an automation rule: when an event matches, run actions (create a task, add a segment, send a message)',
    permission: 'crm:write', status: 201,
    body: z.strictObject({
      name: z.string().trim().min(1).max(200),
      trigger: z.strictObject({ event: z.enum(eventTypes as [string, ...string[]]).describe('An event kind, e.g. order.created.') }),
      conditions: z.array(condition).max(20).optional().describe('All must hold for the event object.'),
      actions: z.array(action).min(1).max(10),
      enabled: z.boolean().optional(),
      metadata: metadata.optional(),
    }),
    response: ruleSchema,
    async handler({ em, auth, body }) {
      const rule = await createRule(em(), auth, body);
      return { body: rule, headers: { Location: `/v3/crm/tasks/automation/${rule.id}` } };
    },
  }),
  listRoute({
    path: '/v3/crm/tasks/automation', operationId: 'listAutomationRules', tag: 'CRM',
    summary: 'List automation rules', permission: 'crm:read',
    query: z.strictObject({ ...listQuery, trigger_event: csv(z.string().min(1)).optional(), enabled: z.enum(['true', 'false']).transform((v) => v === 'true').optional() }),
    item: ruleSchema,
    list: ({ em, query }, page) => listRules(em(), query, page),
  }),
  getRoute({
    path: '/v3/crm/tasks/automation/{rule_id}', operationId: 'getAutomationRule', tag: 'CRM',
    summary: 'Retrieve an automation rule', permission: 'crm:read', readOnly: true,
    params: ruleId, response: ruleSchema,
    get: ({ deps, auth, params }) => readRule(deps.orm, auth, params.rule_id),
  }),
  route({
    method: 'patch', path: '/v3/crm/tasks/automation/{rule_id}', operationId: 'updateAutomationRule', tag: 'CRM',
    summary: 'Rename, enable or disable an automation rule', permission: 'crm:write', status: 200,
    params: ruleId, body: z.strictObject({ name: z.string().trim().min(1).max(200).optional(), enabled: z.boolean().optional() }),
    response: ruleSchema,
    async handler({ em, params, body }) {
      return { body: await updateRule(em(), params.rule_id, body) };
    },
  }),
  listRoute({
    path: '/v3/crm/tasks/automation/{rule_id}/runs', operationId: 'listAutomationRuns', tag: 'CRM',
    summary: "A rule's runs (one per matching event, each a workflow)", permission: 'crm:read',
    params: ruleId, item: runSchema,
    list: ({ em, params }, page) => listRuns(em(), params.rule_id, page),
  }),
  route({
    method: 'post', path: '/v3/crm/tasks', operationId: 'createTask', tag: 'CRM',
    summary: 'Create a task', permission: 'crm:write', status: 201,
    body: z.strictObject({
      title: z.string().trim().min(1).max(300),
      description: z.string().max(5000).optional(),
      customer_id: z.string().min(1).max(64).optional(),
      priority: z.enum(TASK_PRIORITIES).optional(),
      assignee: z.string().max(200).optional(),
      due_at: timestamp.optional(),
      metadata: metadata.optional(),
    }),
    response: taskSchema,
    async handler({ em, auth, body }) {
      const task = await createTask(em(), auth, body);
      return { body: task, headers: { Location: `/v3/crm/tasks/${task.id}` } };
    },
  }),
  listRoute({
    path: '/v3/crm/tasks', operationId: 'listTasks', tag: 'CRM',
    summary: 'List tasks', permission: 'crm:read',
    query: z.strictObject({
      ...listQuery,
      status: csv(z.enum(TASK_STATUSES)).optional(),
      customer_id: csv(z.string().min(1)).optional(),
      rule_id: csv(z.string().min(1)).optional(),
      assignee: csv(z.string().min(1)).optional(),
    }),
    item: taskSchema,
    list: ({ em, query }, page) => listTasks(em(), query, page),
  }),
  getRoute({
    path: '/v3/crm/tasks/{task_id}', operationId: 'getTask', tag: 'CRM',
    summary: 'Retrieve a task', permission: 'crm:read', readOnly: true,
    params: taskId, response: taskSchema,
    get: ({ deps, auth, params }) => readTask(deps.orm, auth, params.task_id),
  }),
  route({
    method: 'post', path: '/v3/crm/tasks/{task_id}/complete', operationId: 'completeTask', tag: 'CRM',
    summary: 'Complete an open task', permission: 'crm:write', status: 200,
    params: taskId, response: taskSchema,
    async handler({ em, params }) {
      return { body: await completeTask(em(), params.task_id) };
    },
  }),
  listRoute({
    path: '/v3/crm/messages', operationId: 'listSandboxMessages', tag: 'CRM',
    summary: 'Messages sent by automations through the sandbox channels', permission: 'crm:read',
    query: z.strictObject({ ...listQuery, customer_id: csv(z.string().min(1)).optional(), channel: csv(z.enum(MESSAGE_CHANNELS)).optional() }),
    item: messageSchema,
    list: ({ em, query }, page) => listMessages(em(), query, page),
  }),
];

export const crmRoutes = (ctx: AreaContext) => [...journeyRoutes, ...automationRoutes(ctx.events.types)];
