import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { CustomerMetrics } from './consumers.ts';
import { scopeFilter, scopedColumns } from '../scope.ts';

/**
 * The outbox: a domain event is written in the same transaction as the change it describes.
 * `dispatchedAt` is set once the event has been handed to its delivery workflows.
 */
export const DomainEvent = defineEntity({
  name: 'DomainEvent',
  tableName: 'events',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    type: p.text(),
    /** `{ object, previous_attributes? }` — the resource as the API shows it. */
    data: p.json<Record<string, unknown>>(),
    customerId: p.string().nullable(),
    requestId: p.string().nullable(),
    dispatchedAt: p.datetime().nullable(),
    /** For events about a customer: `customerMetrics()` as of dispatch, stored so every endpoint and retry sees the same. */
    customerMetrics: p.json<CustomerMetrics>().nullable(),
    /** A test event (POST /v3/webhooks/{id}/test): sent to one endpoint, never fanned out or listed. */
    synthetic: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type DomainEvent = InferEntity<typeof DomainEvent>;
