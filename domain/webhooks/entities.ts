import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import { DELIVERY_STATUSES } from './schemas.ts';

/**
 * A receiver of events. `secret` signs every delivery; after a rotation `previousSecret` signs
 * next to it until `previousSecretExpiresAt`. `enabled` is the caller's switch (a 410 from the
 * receiver also turns it off, with `disabledReason = 'gone'`); `failingSince` is set when a
 * delivery failed for its whole retry window and cleared by the next success.
 */
export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    url: p.text(),
    description: p.text().nullable(),
    events: p.array().$type<string[]>(),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    enabled: p.boolean().default(true),
    disabledReason: p.text().$type<'gone'>().nullable(),
    failingSince: p.datetime().nullable(),
    lastSuccessAt: p.datetime().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

export { DELIVERY_STATUSES, type DeliveryStatus } from './schemas.ts';

/**
 * One event to one endpoint (unique per pair). `failed` with `nextRetryAt` set means a retry is
 * scheduled; `failed` without it means the delivery gave up (window over, 410, endpoint gone).
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    endpointId: p.string(),
    eventId: p.string(),
    eventType: p.text(),
    workflowId: p.text(),
    test: p.boolean().default(false),
    status: p.enum(DELIVERY_STATUSES),
    attempts: p.integer().default(0),
    httpStatus: p.smallint().nullable(),
    responseTimeMs: p.double().nullable(),
    lastError: p.text().nullable(),
    deliveredAt: p.datetime().nullable(),
    deliveredBy: p.text().nullable(),
    nextRetryAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

export const ATTEMPT_OUTCOMES = ['delivered', 'failed', 'refused', 'timeout', 'network_error', 'gone'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** Every HTTP attempt of a delivery (and every attempt refused before any request was sent). */
export const WebhookDeliveryAttempt = defineEntity({
  name: 'WebhookDeliveryAttempt',
  tableName: 'webhook_delivery_attempts',
  filters: scopeFilter,
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    deliveryId: p.string(),
    accountId: p.string(),
    livemode: p.boolean(),
    number: p.integer(),
    startedAt: p.datetime(),
    responseTimeMs: p.double().nullable(),
    httpStatus: p.smallint().nullable(),
    outcome: p.enum(ATTEMPT_OUTCOMES),
    error: p.text().nullable(),
    responseExcerpt: p.text().nullable(),
    nextRetryAt: p.datetime().nullable(),
  },
});
export type WebhookDeliveryAttempt = InferEntity<typeof WebhookDeliveryAttempt>;
