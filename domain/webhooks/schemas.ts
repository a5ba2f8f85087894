import { z } from 'zod';

/**
 * The webhooks area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only (workflows may import the types, with `import type`).
 */

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const endpointSchema = z
  .object({
    id: z.string(),
    object: z.literal('webhook_endpoint'),
    livemode: z.boolean(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(z.string()),
    enabled: z.boolean(),
    status: z.enum(['enabled', 'disabled', 'failing']),
    disabled_reason: z.enum(['gone']).nullable(),
    failing_since: z.iso.datetime().nullable(),
    previous_secret_expires_at: z.iso.datetime().nullable(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    secret: z.string().optional().describe('Only in the answers to create and rotate-secret.'),
  })
  .meta({ id: 'WebhookEndpoint' });

export const deliverySchema = z
  .object({
    id: z.string(),
    object: z.literal('webhook_delivery'),
    livemode: z.boolean(),
    webhook_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    http_status: z.number().int().nullable(),
    attempts: z.number().int(),
    delivered_at: z.iso.datetime().nullable(),
    response_time: z.number().nullable().describe('Milliseconds, for the last attempt.'),
    next_retry: z.iso.datetime().nullable(),
    last_error: z.string().nullable(),
    test: z.boolean(),
    workflow_id: z.string(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookDelivery' });

export const attemptSchema = z.object({
  number: z.number().int(),
  started_at: z.iso.datetime(),
  outcome: z.enum(['delivered', 'failed', 'refused', 'timeout', 'network_error', 'gone']),
  http_status: z.number().int().nullable(),
  response_time: z.number().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
  next_retry: z.iso.datetime().nullable(),
});

/** The WebhookEndpoint resource; `secret` only in the answers to create and rotate-secret. */
export type EndpointView = z.output<typeof endpointSchema>;
/** The WebhookDelivery resource. */
export type DeliveryView = z.output<typeof deliverySchema>;
/** One attempt of a delivery (`attempt_history` of GET …/deliveries/{id}). */
export type AttemptView = z.output<typeof attemptSchema>;
