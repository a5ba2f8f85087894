import { z } from 'zod';
import { eventSchema } from '../../../domain/events/schemas.ts';
import { listEvents, readEvent } from '../../../domain/events/service.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute } from '../../http/route.ts';
import { csv, dateOrTimestamp } from '../../http/schemas.ts';

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
  listRoute({
    path: '/v3/events', operationId: 'listEvents', tag: 'Events',
    summary: 'List events (newest first)', permission: 'webhooks:read',
    query: listEventsQuery, item: eventSchema,
    list: ({ em, query }, page) => listEvents(em(), query, page),
  }),
  getRoute({
    path: '/v3/events/{event_id}', operationId: 'getEvent', tag: 'Events',
    summary: 'Retrieve an event', permission: 'webhooks:read', readOnly: true,
    params: z.strictObject({ event_id: z.string().min(1).max(64) }), response: eventSchema,
    get: ({ deps, auth, params }) => readEvent(deps.orm, auth, params.event_id),
  }),
];
