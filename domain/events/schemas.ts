import { z } from 'zod';

/**
 * The Event resource (GET /v3/events, owned by the platform area), declared once: the zod schema
 * is what the routes answer with and what the OpenAPI document shows; the TS type is inferred from
 * it. Pure: zod only.
 */

export const customerMetrics = z.object({
  total_ltv: z.number().describe('Lifetime value in decimal major units.'),
  engagement_score: z.number(),
  lifecycle_stage: z.string(),
});

export const eventSchema = z
  .object({
    id: z.string(),
    object: z.literal('event'),
    type: z.string(),
    timestamp: z.iso.datetime().describe('When the event happened (the webhook payload carries the same).'),
    livemode: z.boolean(),
    data: z.record(z.string(), z.unknown()).describe('`object`: the resource as the API shows it; `previous_attributes` on updates.'),
    created_at: z.iso.datetime(),
    request_id: z.string().nullable().describe('The API request that caused the event, if any.'),
    customer_id: z.string().nullable(),
    customer_metrics: customerMetrics.nullable().describe('On events about a customer, once dispatched (milliseconds after the write).'),
    dispatched_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Event' });

/** GET /v3/events/{id}: the envelope plus what helps debugging. */
export type EventView = z.output<typeof eventSchema>;
