import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import type { CustomerMetrics } from './consumers.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { escapeLike } from '../search.ts';
import type { EventKind } from './catalog.ts';
import { DomainEvent } from './entities.ts';
import type { EventView } from './schemas.ts';

export type { EventView } from './schemas.ts';

/**
 * What a webhook receiver gets (the body of every delivery of the event, identical across
 * endpoints and retries): `{ id, object, type, timestamp, livemode, data, customer_metrics? }`.
 */
export interface EventEnvelope {
  id: string;
  object: 'event';
  type: string;
  timestamp: string;
  livemode: boolean;
  data: Record<string, unknown>;
  customer_metrics?: CustomerMetrics;
}

/** The members every event document starts with: the webhook envelope and the API view alike. */
function eventHead(e: Pick<DomainEvent, 'id' | 'type' | 'livemode' | 'data' | 'createdAt'>) {
  return { id: e.id, object: 'event' as const, type: e.type, timestamp: e.createdAt.toISOString(), livemode: e.livemode, data: e.data };
}

export function eventEnvelope(e: Pick<DomainEvent, 'id' | 'type' | 'livemode' | 'data' | 'customerMetrics' | 'createdAt'>): EventEnvelope {
  const envelope: EventEnvelope = eventHead(e);
  if (e.customerMetrics) envelope.customer_metrics = e.customerMetrics;
  return envelope;
}

export function eventView(e: DomainEvent): EventView {
  return {
    ...eventHead(e),
    created_at: e.createdAt.toISOString(),
    request_id: e.requestId ?? null,
    customer_id: e.customerId ?? null,
    customer_metrics: e.customerMetrics ?? null,
    dispatched_at: e.dispatchedAt ? e.dispatchedAt.toISOString() : null,
  };
}

/** An event by id for GET /v3/events/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readEvent(orm: MikroORM, scope: Scope, id: string): Promise<EventView> {
  return eventView(await readScopedOr404(orm, scope, DomainEvent, id, 'event'));
}

export interface EventFilters {
  type?: string[];
  customer_id?: string;
  created_gte?: Date;
  created_lte?: Date;
}

/** Real events only (test events sent with POST /v3/webhooks/{id}/test are not listed). */
export async function listEvents(
  em: EntityManager, filters: EventFilters, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<EventView[]> {
  const where: Record<string, unknown>[] = [page.where, { synthetic: false }];
  if (filters.type) {
    // `order.*` matches every kind under `order.`.
    const exact = filters.type.filter((t) => !t.endsWith('.*'));
    const prefixes = filters.type.filter((t) => t.endsWith('.*')).map((t) => t.slice(0, -1));
    where.push({ $or: [...(exact.length ? [{ type: { $in: exact } }] : []), ...prefixes.map((p) => ({ type: { $like: `${escapeLike(p)}%` } }))] });
  }
  if (filters.customer_id) where.push({ customerId: filters.customer_id });
  if (filters.created_gte) where.push({ createdAt: { $gte: filters.created_gte } });
  if (filters.created_lte) where.push({ createdAt: { $lte: filters.created_lte } });
  const rows = await em.find(DomainEvent, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(eventView);
}

/**
 * A test event for one endpoint: stored (so its delivery has an event to point at) but born
 * dispatched, so the outbox never fans it out. Without `object`, the catalog's example is sent.
 */
export async function createTestEvent(
  em: EntityManager, scope: Scope, kind: EventKind, object: Record<string, unknown> | undefined, requestId: string,
): Promise<DomainEvent> {
  const event = em.create(DomainEvent, {
    id: newId('event'),
    ...scopeColumns(scope),
    type: kind.type,
    data: { object: object ?? { ...kind.example, livemode: scope.livemode } },
    customerId: null,
    requestId,
    dispatchedAt: new Date(),
    customerMetrics: kind.aboutCustomer ? { total_ltv: 1250.5, engagement_score: 72, lifecycle_stage: 'customer' } : null,
    synthetic: true,
  });
  await em.flush();
  return event;
}
