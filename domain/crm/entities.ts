import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import type { SegmentRuleGroup } from './segment-rules.ts';

export const INTERACTION_TYPES = ['call', 'email', 'meeting', 'chat', 'support_ticket'] as const;
export type InteractionType = (typeof INTERACTION_TYPES)[number];
export const INTERACTION_DIRECTIONS = ['inbound', 'outbound'] as const;
export type InteractionDirection = (typeof INTERACTION_DIRECTIONS)[number];

export const Interaction = defineEntity({
  name: 'Interaction',
  tableName: 'customer_interactions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    type: p.enum(INTERACTION_TYPES),
    direction: p.enum(INTERACTION_DIRECTIONS),
    subject: p.text().nullable(),
    notes: p.text().nullable(),
    occurredAt: p.datetime(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Interaction = InferEntity<typeof Interaction>;

/** A recorded visit or other touch (website_visit, email_open, ad_click, …). */
export const Touchpoint = defineEntity({
  name: 'Touchpoint',
  tableName: 'customer_touchpoints',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string(),
    type: p.text(),
    source: p.text().nullable(),
    url: p.text().nullable(),
    occurredAt: p.datetime(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Touchpoint = InferEntity<typeof Touchpoint>;

export const CONDITION_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'exists'] as const;
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];

export interface RuleCondition {
  /** Dotted path into the event's object, e.g. `total_amount` or `shipping_address.country`. */
  field: string;
  operator: ConditionOperator;
  value?: unknown;
}

export const MESSAGE_CHANNELS = ['sandbox_email', 'sandbox_sms', 'sandbox_whatsapp'] as const;
export type MessageChannel = (typeof MESSAGE_CHANNELS)[number];

export type RuleAction =
  | { type: 'create_task'; title: string; description?: string; priority?: 'low' | 'normal' | 'high'; assignee?: string; due_in_hours?: number }
  | { type: 'add_segment'; segment: string }
  | { type: 'send_message'; channel: MessageChannel; body: string };

export const AutomationRule = defineEntity({
  name: 'AutomationRule',
  tableName: 'crm_automation_rules',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    triggerEvent: p.text(),
    conditions: p.json<RuleCondition[]>(),
    actions: p.json<RuleAction[]>(),
    enabled: p.boolean(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type AutomationRule = InferEntity<typeof AutomationRule>;

export interface ActionResult {
  type: RuleAction['type'];
  /** The task or message it created, or the segment it added. */
  ref: string | null;
  outcome: 'done' | 'skipped';
  detail?: string;
}

export const AutomationRun = defineEntity({
  name: 'AutomationRun',
  tableName: 'crm_automation_runs',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    ruleId: p.string(),
    eventId: p.string(),
    workflowId: p.text(),
    status: p.enum(['running', 'completed', 'failed'] as const),
    results: p.json<ActionResult[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    completedAt: p.datetime().nullable(),
  },
});
export type AutomationRun = InferEntity<typeof AutomationRun>;

export const TASK_STATUSES = ['open', 'completed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TASK_PRIORITIES = ['low', 'normal', 'high'] as const;

export const CrmTask = defineEntity({
  name: 'CrmTask',
  tableName: 'crm_tasks',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string().nullable(),
    title: p.text(),
    description: p.text().nullable(),
    status: p.enum(TASK_STATUSES),
    priority: p.enum(TASK_PRIORITIES),
    assignee: p.text().nullable(),
    dueAt: p.datetime().nullable(),
    ruleId: p.string().nullable(),
    eventId: p.string().nullable(),
    sourceKey: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    metadata: p.json<Record<string, string>>(),
    version: p.integer().version(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type CrmTask = InferEntity<typeof CrmTask>;

export const CrmMessage = defineEntity({
  name: 'CrmMessage',
  tableName: 'crm_messages',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    customerId: p.string().nullable(),
    channel: p.text(),
    recipient: p.text(),
    body: p.text(),
    status: p.text(),
    providerMessageId: p.text(),
    sourceKey: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type CrmMessage = InferEntity<typeof CrmMessage>;

export const SEGMENT_STATUSES = ['active', 'archived'] as const;

/** A saved customer segment: rules over customer fields and metrics (domain/crm/segments.ts). */
export const Segment = defineEntity({
  name: 'Segment',
  tableName: 'crm_segments',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    description: p.text().nullable(),
    rules: p.json<SegmentRuleGroup>(),
    status: p.enum(SEGMENT_STATUSES),
    rulesVersion: p.integer(),
    memberCount: p.integer(),
    lastEvaluatedAt: p.datetime().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Segment = InferEntity<typeof Segment>;
