import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { Interaction, Touchpoint, type InteractionDirection, type InteractionType } from './entities.ts';
import { Customer, customerView } from '../customers/public.ts';

/**
 * Interactions (calls, emails, meetings, chats, support tickets) and recorded touchpoints (website
 * visits and the like) feed the customer journey. Each one recorded changes the customer's journey
 * metrics, so it records `customer.updated` (data.object is the customer; the event's
 * customer_metrics carry the new lifecycle stage, LTV and engagement score).
 */

export interface InteractionView {
  id: string;
  object: 'interaction';
  livemode: boolean;
  customer_id: string;
  type: InteractionType;
  direction: InteractionDirection;
  subject: string | null;
  notes: string | null;
  occurred_at: string;
  metadata: Record<string, string>;
  created_at: string;
}

export interface InteractionInput {
  type: InteractionType;
  direction: InteractionDirection;
  subject?: string;
  notes?: string;
  occurred_at?: Date;
  metadata?: Record<string, string>;
}

export interface TouchpointView {
  id: string;
  object: 'touchpoint';
  livemode: boolean;
  customer_id: string;
  type: string;
  source: string | null;
  url: string | null;
  occurred_at: string;
  metadata: Record<string, string>;
  created_at: string;
}

export interface TouchpointInput {
  type: string;
  source?: string;
  url?: string;
  occurred_at?: Date;
  metadata?: Record<string, string>;
}

export function interactionView(i: Interaction): InteractionView {
  return {
    id: i.id, object: 'interaction', livemode: i.livemode, customer_id: i.customerId, type: i.type, direction: i.direction,
    subject: i.subject ?? null, notes: i.notes ?? null, occurred_at: i.occurredAt.toISOString(), metadata: i.metadata,
    created_at: i.createdAt.toISOString(),
  };
}

export function touchpointView(t: Touchpoint): TouchpointView {
  return {
    id: t.id, object: 'touchpoint', livemode: t.livemode, customer_id: t.customerId, type: t.type, source: t.source ?? null,
    url: t.url ?? null, occurred_at: t.occurredAt.toISOString(), metadata: t.metadata, created_at: t.createdAt.toISOString(),
  };
}

async function requireCustomer(em: EntityManager, customerId: string): Promise<Customer> {
  const customer = await em.findOne(Customer, { id: customerId });
  if (!customer) throw notFound('customer', customerId);
  return customer;
}

export async function recordInteraction(
  em: EntityManager, scope: Scope, customerId: string, input: InteractionInput, requestId: string | null,
): Promise<InteractionView> {
  const customer = await requireCustomer(em, customerId);
  const interaction = em.create(Interaction, {
    id: newId('interaction'), ...scopeColumns(scope), customerId: customer.id, type: input.type, direction: input.direction,
    subject: input.subject ?? null, notes: input.notes ?? null, occurredAt: input.occurred_at ?? new Date(), metadata: input.metadata ?? {},
  });
  recordEvent(em, scope, { type: 'customer.updated', object: customerView(customer), customerId: customer.id, requestId });
  await em.flush();
  return interactionView(interaction);
}

export async function listInteractions(
  em: EntityManager, customerId: string, filters: { type?: InteractionType[]; direction?: InteractionDirection[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<InteractionView[]> {
  await requireCustomer(em, customerId);
  const where: Record<string, unknown>[] = [page.where, { customerId }];
  if (filters.type) where.push({ type: { $in: filters.type } });
  if (filters.direction) where.push({ direction: { $in: filters.direction } });
  const rows = await em.find(Interaction, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(interactionView);
}

export async function recordTouchpoint(
  em: EntityManager, scope: Scope, customerId: string, input: TouchpointInput, requestId: string | null,
): Promise<TouchpointView> {
  const customer = await requireCustomer(em, customerId);
  const touchpoint = em.create(Touchpoint, {
    id: newId('touchpoint'), ...scopeColumns(scope), customerId: customer.id, type: input.type, source: input.source ?? null,
    url: input.url ?? null, occurredAt: input.occurred_at ?? new Date(), metadata: input.metadata ?? {},
  });
  recordEvent(em, scope, { type: 'customer.updated', object: customerView(customer), customerId: customer.id, requestId });
  await em.flush();
  return touchpointView(touchpoint);
}
