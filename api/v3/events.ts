import { z } from 'zod';
import { getEvent, listEvents } from '../../domain/events/service.ts';
import { idAfter, listDocument, listOf, listQuery, pageOf } from '../http/pagination.ts';
import { route } from '../http/route.ts';
import { csv, dateOrTimestamp } from '../http/schemas.ts';

const customerMetrics = z.object({
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

const listEventsQuery = z.strictObject({
  ...listQuery,
  type: csv(z.string().regex(/^[a-z_]+(\.[a-z_]+)*(\.\*)?$/, 'an event kind such as order.created, or a prefix such as order.*'))
    .optional().describe('One or more kinds, comma-separated; `order.*` matches every kind under order.'),
  customer_id: z.string().min(1).max(64).optional(),
  created_gte: dateOrTimestamp('start').optional(),
  created_lte: dateOrTimestamp('end').optional(),
});

/** Events, for debugging what was (or will be) delivered. Read with `webhooks:read`. */
export const eventRoutes = [
  route({
    method: 'get', path: '/v3/events', operationId: 'listEvents', tag: 'Events',
    summary: 'List events (newest first)', permission: 'webhooks:read', status: 200,
    query: listEventsQuery, response: listOf(eventSchema),
    async handler({ em, req, query }) {
      const page = pageOf(query);
      const rows = await listEvents(em(), query, { where: idAfter(page), direction: page.direction, limit: page.limit });
      return listDocument(req, rows, page);
    },
  }),
  route({
    method: 'get', path: '/v3/events/{event_id}', operationId: 'getEvent', tag: 'Events',
    summary: 'Retrieve an event', permission: 'webhooks:read', status: 200,
    params: z.strictObject({ event_id: z.string().min(1).max(64) }), response: eventSchema,
    async handler({ em, params }) {
      return { body: await getEvent(em(), params.event_id) };
    },
  }),
];
