import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { scopeColumns, type NewRecord, type Scope } from '../scope.ts';
import type { EventType } from './catalog.ts';
import { DomainEvent } from './entities.ts';

/**
 * Records a domain event in the outbox. Call it with the EntityManager that holds the change the
 * event describes: the event row is written by the same flush, in the same transaction. A trigger
 * on `events` notifies the dispatcher when the transaction commits (see domain/events/dispatch.ts).
 *
 * `type` must be in the event catalog (domain/events/catalog.ts): add a new kind there, with an
 * example payload, before emitting it.
 */
export function recordEvent(em: EntityManager, scope: Scope, event: NewEvent): DomainEvent {
  return em.create(DomainEvent, { ...eventRecord(event).data, ...scopeColumns(scope) } as DomainEvent);
}

export interface NewEvent {
  type: EventType;
  object: object;
  previousAttributes?: Record<string, unknown>;
  customerId?: string | null;
  requestId?: string | null;
}

/**
 * `recordEvent`'s row for a write that inserts its records itself in one statement
 * (`insertScoped`, the order's hot path): the same event, written in the same transaction.
 */
export function eventRecord(event: NewEvent): NewRecord {
  const data: Record<string, unknown> = { object: event.object };
  if (event.previousAttributes) data.previous_attributes = event.previousAttributes;
  return {
    entity: DomainEvent,
    data: {
      id: newId('event'), type: event.type, data,
      customerId: event.customerId ?? null, requestId: event.requestId ?? null,
      dispatchedAt: null, customerMetrics: null, synthetic: false,
    },
  };
}
