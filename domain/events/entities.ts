import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter } from '../scope.ts';

/**
 * The outbox: a domain event is written in the same transaction as the change it describes.
 * `dispatchedAt` is set once the event has been handed to its delivery workflows.
 */
export const DomainEvent = defineEntity({
  name: 'DomainEvent',
  tableName: 'events',
  filters: scopeFilter,
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    type: p.text(),
    /** `{ object, previous_attributes? }` — the resource as the API shows it. */
    data: p.json<Record<string, unknown>>(),
    customerId: p.string().nullable(),
    requestId: p.string().nullable(),
    dispatchedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type DomainEvent = InferEntity<typeof DomainEvent>;
