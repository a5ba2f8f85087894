import { createHash } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import type { Scope } from '../scope.ts';
import { readPath } from './automation.ts';
import { CrmMessage, CrmTask, type ActionResult, type MessageChannel, type RuleAction } from './entities.ts';
import { Customer, customerView } from '../customers/public.ts';

/**
 * What the automation workflow's activities do. Every action is idempotent under retry: the
 * task or message it makes carries `source_key` = rule:event:index (unique), and adding a segment
 * the customer already has changes nothing.
 */

export interface ActionInput {
  ruleId: string;
  eventId: string;
  eventType: string;
  index: number;
  action: RuleAction;
  customerId: string | null;
  object: Record<string, unknown>;
}

/** Sandbox message channels: they accept a message and give it a provider id, as a real one would. */
export interface MessageChannelAdapter {
  name: MessageChannel;
  recipient(customer: Customer): string | null;
  send(message: { recipient: string; body: string; idempotencyKey: string }): { status: 'sent'; providerMessageId: string };
}

const phoneOf = (c: Customer): string | null => {
  const value = c.customFields?.phone ?? c.metadata?.phone;
  return typeof value === 'string' && /^\+[1-9]\d{6,14}$/.test(value) ? value : null;
};

function sandboxChannel(name: MessageChannel, recipient: (c: Customer) => string | null): MessageChannelAdapter {
  return {
    name,
    recipient,
    send({ idempotencyKey }) {
      // The same key always yields the same provider id, as a provider's idempotency would.
      const id = createHash('sha256').update(`${name}:${idempotencyKey}`).digest('hex').slice(0, 24);
      return { status: 'sent', providerMessageId: `sbx_${id}` };
    },
  };
}

export const MESSAGE_CHANNEL_ADAPTERS: Record<MessageChannel, MessageChannelAdapter> = {
  sandbox_email: sandboxChannel('sandbox_email', (c) => c.email ?? null),
  sandbox_sms: sandboxChannel('sandbox_sms', phoneOf),
  sandbox_whatsapp: sandboxChannel('sandbox_whatsapp', phoneOf),
};

/** `{{customer.name}}`, `{{event.type}}`, `{{object.total_amount}}` placeholders; unknown ones become empty. */
export function renderTemplate(template: string, context: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([a-zA-Z0-9_.]+)\s*\}\}/g, (_m, path: string) => {
    const value = readPath(context, path);
    return value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}

export async function startRun(em: EntityManager, scope: Scope, ref: { ruleId: string; eventId: string; workflowId: string }): Promise<void> {
  await em.execute(
    `insert into crm_automation_runs (id, account_id, livemode, rule_id, event_id, workflow_id, status, results, created_at)
     values (?, ?, ?, ?, ?, ?, 'running', '[]', now()) on conflict (rule_id, event_id) do nothing`,
    [newId('automationRun'), scope.accountId, scope.livemode, ref.ruleId, ref.eventId, ref.workflowId],
  );
}

export async function finishRun(
  em: EntityManager, scope: Scope, ref: { ruleId: string; eventId: string; status: 'completed' | 'failed'; results: ActionResult[] },
): Promise<void> {
  await em.execute(
    `update crm_automation_runs set status = ?, results = ?::jsonb, completed_at = now()
      where account_id = ? and livemode = ? and rule_id = ? and event_id = ?`,
    [ref.status, JSON.stringify(ref.results), scope.accountId, scope.livemode, ref.ruleId, ref.eventId],
  );
}

export async function runAction(em: EntityManager, scope: Scope, input: ActionInput): Promise<ActionResult> {
  const { action } = input;
  const sourceKey = `${input.ruleId}:${input.eventId}:${input.index}`;
  switch (action.type) {
    case 'create_task': {
      const due = action.due_in_hours !== undefined ? new Date(Date.now() + action.due_in_hours * 3_600_000).toISOString() : null;
      await em.execute(
        `insert into crm_tasks (id, account_id, livemode, customer_id, title, description, status, priority, assignee, due_at,
                                rule_id, event_id, source_key, metadata, version, created_at, updated_at)
         values (?, ?, ?, ?, ?, ?, 'open', ?, ?, ?::timestamptz, ?, ?, ?, '{}', 1, now(), now())
         on conflict (source_key) do nothing`,
        [newId('task'), scope.accountId, scope.livemode, input.customerId, renderTemplate(action.title, await templateContext(em, input)),
          action.description ? renderTemplate(action.description, await templateContext(em, input)) : null,
          action.priority ?? 'normal', action.assignee ?? null, due, input.ruleId, input.eventId, sourceKey],
      );
      const task = await em.findOneOrFail(CrmTask, { sourceKey });
      return { type: action.type, ref: task.id, outcome: 'done' };
    }
    case 'add_segment': {
      if (!input.customerId) return { type: action.type, ref: null, outcome: 'skipped', detail: 'the event is not about a customer' };
      return em.transactional(async (tx) => {
        const customer = await tx.findOne(Customer, { id: input.customerId! }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!customer) return { type: action.type, ref: null, outcome: 'skipped', detail: `customer ${input.customerId} no longer exists` } satisfies ActionResult;
        if (customer.segments.includes(action.segment)) return { type: action.type, ref: action.segment, outcome: 'done', detail: 'already in the segment' } satisfies ActionResult;
        const previous = [...customer.segments];
        customer.segments = [...previous, action.segment];
        customer.updatedAt = new Date();
        recordEvent(tx, scope, {
          type: 'customer.updated', object: customerView(customer), previousAttributes: { segments: previous },
          customerId: customer.id, requestId: null,
        });
        await tx.flush();
        return { type: action.type, ref: action.segment, outcome: 'done' } satisfies ActionResult;
      });
    }
    case 'send_message': {
      const existing = await em.findOne(CrmMessage, { sourceKey });
      if (existing) return { type: action.type, ref: existing.id, outcome: 'done' };
      const customer = input.customerId ? await em.findOne(Customer, { id: input.customerId }) : null;
      if (!customer) return { type: action.type, ref: null, outcome: 'skipped', detail: 'the event is not about a known customer' };
      const channel = MESSAGE_CHANNEL_ADAPTERS[action.channel];
      const recipient = channel.recipient(customer);
      if (!recipient) {
        return { type: action.type, ref: null, outcome: 'skipped', detail: `customer has no ${action.channel === 'sandbox_email' ? 'email' : 'phone number (custom_fields.phone, E.164)'}` };
      }
      const body = renderTemplate(action.body, await templateContext(em, input, customer));
      const sent = channel.send({ recipient, body, idempotencyKey: sourceKey });
      const id = newId('message');
      await em.execute(
        `insert into crm_messages (id, account_id, livemode, customer_id, channel, recipient, body, status, provider_message_id, source_key, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now()) on conflict (source_key) do nothing`,
        [id, scope.accountId, scope.livemode, customer.id, channel.name, recipient, body, sent.status, sent.providerMessageId, sourceKey],
      );
      const message = await em.findOneOrFail(CrmMessage, { sourceKey });
      return { type: action.type, ref: message.id, outcome: 'done' };
    }
  }
}

async function templateContext(em: EntityManager, input: ActionInput, known?: Customer): Promise<Record<string, unknown>> {
  const customer = known ?? (input.customerId ? await em.findOne(Customer, { id: input.customerId }) : null);
  return {
    customer: customer ? customerView(customer) : {},
    event: { id: input.eventId, type: input.eventType },
    object: input.object,
  };
}

export interface MessageView {
  id: string;
  object: 'message';
  livemode: boolean;
  customer_id: string | null;
  channel: string;
  recipient: string;
  body: string;
  status: string;
  provider_message_id: string;
  created_at: string;
}

export function messageView(m: CrmMessage): MessageView {
  return {
    id: m.id, object: 'message', livemode: m.livemode, customer_id: m.customerId ?? null, channel: m.channel, recipient: m.recipient,
    body: m.body, status: m.status, provider_message_id: m.providerMessageId, created_at: m.createdAt.toISOString(),
  };
}

export async function listMessages(
  em: EntityManager, filters: { customer_id?: string[]; channel?: string[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<MessageView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.customer_id) where.push({ customerId: { $in: filters.customer_id } });
  if (filters.channel) where.push({ channel: { $in: filters.channel } });
  const rows = await em.find(CrmMessage, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(messageView);
}
