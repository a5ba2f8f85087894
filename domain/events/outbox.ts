import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { DomainEvent } from './entities.ts';

export interface EventView {
  id: string;
  object: 'event';
  type: string;
  livemode: boolean;
  created_at: string;
  request_id: string | null;
  data: Record<string, unknown>;
}

/**
 * Records a domain event in the outbox. Call it with the EntityManager that holds the change the
 * event describes: the event row is written by the same flush, in the same transaction.
 */
export function recordEvent(
  em: EntityManager,
  scope: Scope,
  event: { type: string; object: object; previousAttributes?: Record<string, unknown>; customerId?: string | null; requestId?: string | null },
): DomainEvent {
  const data: Record<string, unknown> = { object: event.object };
  if (event.previousAttributes) data.previous_attributes = event.previousAttributes;
  return em.create(DomainEvent, {
    id: newId('event'),
    ...scopeColumns(scope),
    type: event.type,
    data,
    customerId: event.customerId ?? null,
    requestId: event.requestId ?? null,
    dispatchedAt: null,
  });
}

export function eventView(e: DomainEvent): EventView {
  return {
    id: e.id,
    object: 'event',
    type: e.type,
    livemode: e.livemode,
    created_at: e.createdAt.toISOString(),
    request_id: e.requestId ?? null,
    data: e.data,
  };
}
