import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import { automationWorkflowId, type AutomationRunInput } from '../../workflows/crm/shared.ts';
import { perPass, type EventConsumer, type OutboxEvent, type WorkflowStartRequest } from '../events/consumers.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { AutomationRule, AutomationRun, type ActionResult, type RuleAction, type RuleCondition } from './entities.ts';

/**
 * CRM automation rules: "when an event of this kind happens and these conditions hold, do these
 * actions". The outbox dispatcher shows every event to `crmAutomationConsumer`, which matches the
 * account's enabled rules and plans one workflow per matching rule, id
 * `crm-automation-<rule>-<event>` (so a re-dispatched event fires a rule once).
 */

export interface RuleView {
  id: string;
  object: 'automation_rule';
  livemode: boolean;
  name: string;
  trigger: { event: string };
  conditions: RuleCondition[];
  actions: RuleAction[];
  enabled: boolean;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export interface RuleInput {
  name: string;
  trigger: { event: string };
  conditions?: RuleCondition[];
  actions: RuleAction[];
  enabled?: boolean;
  metadata?: Record<string, string>;
}

export function ruleView(r: AutomationRule): RuleView {
  return {
    id: r.id, object: 'automation_rule', livemode: r.livemode, name: r.name, trigger: { event: r.triggerEvent },
    conditions: r.conditions, actions: r.actions, enabled: r.enabled, metadata: r.metadata,
    created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(),
  };
}

export async function createRule(em: EntityManager, scope: Scope, input: RuleInput): Promise<RuleView> {
  const rule = em.create(AutomationRule, {
    id: newId('automationRule'), ...scopeColumns(scope), name: input.name, triggerEvent: input.trigger.event,
    conditions: input.conditions ?? [], actions: input.actions, enabled: input.enabled ?? true, metadata: input.metadata ?? {},
  });
  await em.flush();
  return ruleView(rule);
}

/** A rule by id for GET /v3/crm/tasks/automation/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readRule(orm: MikroORM, scope: Scope, id: string): Promise<RuleView> {
  return ruleView(await readScopedOr404(orm, scope, AutomationRule, id, 'automation rule'));
}

export async function getRule(em: EntityManager, id: string): Promise<RuleView> {
  const rule = await em.findOne(AutomationRule, { id });
  if (!rule) throw notFound('automation rule', id);
  return ruleView(rule);
}

export async function updateRule(em: EntityManager, id: string, patch: { name?: string; enabled?: boolean }): Promise<RuleView> {
  const rule = await em.findOne(AutomationRule, { id });
  if (!rule) throw notFound('automation rule', id);
  if (patch.name !== undefined) rule.name = patch.name;
  if (patch.enabled !== undefined) rule.enabled = patch.enabled;
  await em.flush();
  return ruleView(rule);
}

export async function listRules(
  em: EntityManager, filters: { trigger_event?: string[]; enabled?: boolean },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<RuleView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.trigger_event) where.push({ triggerEvent: { $in: filters.trigger_event } });
  if (filters.enabled !== undefined) where.push({ enabled: filters.enabled });
  const rows = await em.find(AutomationRule, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(ruleView);
}

export interface RunView {
  id: string;
  object: 'automation_run';
  livemode: boolean;
  rule_id: string;
  event_id: string;
  workflow_id: string;
  status: 'running' | 'completed' | 'failed';
  results: ActionResult[];
  created_at: string;
  completed_at: string | null;
}

export function runView(r: AutomationRun): RunView {
  return {
    id: r.id, object: 'automation_run', livemode: r.livemode, rule_id: r.ruleId, event_id: r.eventId, workflow_id: r.workflowId,
    status: r.status, results: r.results, created_at: r.createdAt.toISOString(), completed_at: r.completedAt?.toISOString() ?? null,
  };
}

export async function listRuns(
  em: EntityManager, ruleId: string, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<RunView[]> {
  await getRule(em, ruleId);
  const rows = await em.find(AutomationRun, { $and: [page.where, { ruleId }] }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(runView);
}

/** Reads a dotted path (`shipping_address.country`, `line_items.0.sku`) from an object. */
export function readPath(object: unknown, path: string): unknown {
  let value: unknown = object;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function compare(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return null;
}

/** True when every condition holds for the event's object (no conditions: always). */
export function conditionsMatch(conditions: RuleCondition[], object: unknown): boolean {
  return conditions.every((c) => {
    const actual = readPath(object, c.field);
    switch (c.operator) {
      case 'exists': return (actual !== undefined && actual !== null) === (c.value !== false);
      case 'eq': return JSON.stringify(actual) === JSON.stringify(c.value);
      case 'neq': return JSON.stringify(actual) !== JSON.stringify(c.value);
      case 'in': return Array.isArray(c.value) && c.value.some((v) => JSON.stringify(v) === JSON.stringify(actual));
      case 'contains':
        if (typeof actual === 'string') return typeof c.value === 'string' && actual.includes(c.value);
        return Array.isArray(actual) && actual.some((v) => JSON.stringify(v) === JSON.stringify(c.value));
      default: {
        const diff = compare(actual, c.value);
        if (diff === null) return false;
        return c.operator === 'gt' ? diff > 0 : c.operator === 'gte' ? diff >= 0 : c.operator === 'lt' ? diff < 0 : diff <= 0;
      }
    }
  });
}

function customerOf(event: OutboxEvent): string | null {
  if (event.customerId) return event.customerId;
  const object = event.data.object as { object?: unknown; id?: unknown } | undefined;
  return object?.object === 'customer' && typeof object.id === 'string' ? object.id : null;
}

export function automationStart(rule: AutomationRule, event: OutboxEvent): WorkflowStartRequest {
  const customerId = customerOf(event);
  const input: AutomationRunInput = {
    ruleId: rule.id, eventId: event.id, eventType: event.type, accountId: event.accountId, livemode: event.livemode,
    customerId, actions: rule.actions, object: (event.data.object ?? {}) as Record<string, unknown>,
  };
  return {
    workflowType: 'crmAutomationWorkflow', workflowId: automationWorkflowId(rule.id, event.id), area: 'crm', args: [input],
    searchAttributes: searchAttributes({ accountId: event.accountId, livemode: event.livemode, customerId, resourceId: rule.id }),
  };
}

/** The outbox consumer: every enabled rule whose trigger and conditions match fires once. */
export const crmAutomationConsumer: EventConsumer = {
  name: 'crm-automation',
  async plan(event, em) {
    const rules = await perPass(em, `crm-automation:rules:${event.type}`, () =>
      em.find(AutomationRule, { triggerEvent: event.type, enabled: true }, { orderBy: { id: 'asc' } }));
    return rules.filter((r) => conditionsMatch(r.conditions, event.data.object)).map((r) => automationStart(r, event));
  },
};
