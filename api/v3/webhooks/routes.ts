import { z } from 'zod';
import { ALL_EVENTS } from '../../../domain/events/catalog.ts';
import { replayDelivery, sendTestEvent } from '../../../domain/webhooks/actions.ts';
import { DELIVERY_STATUSES, attemptSchema, deliverySchema, endpointSchema } from '../../../domain/webhooks/schemas.ts';
import {
  createEndpoint, deleteEndpoint, getDelivery, listDeliveries, listEndpoints, readEndpoint, rotateSecret, updateEndpoint,
  type EndpointSettings,
} from '../../../domain/webhooks/service.ts';
import { SECRET_PREFIX } from '../../../domain/webhooks/signing.ts';
import type { AppDeps } from '../../http/deps.ts';
import type { AreaContext } from '../../../platform/area.ts';
import { idAfter, listDocument, listQuery, listRoute, pageOf } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { csv, metadata } from '../../http/schemas.ts';

const settings = (deps: AppDeps): EndpointSettings => ({ allowPrivateNetworks: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, catalog: deps.events });
const starter = (deps: AppDeps) => ({ client: deps.temporal.client, taskQueue: deps.temporal.taskQueue('webhooks') });

const url = z.string().trim().min(1).max(2048).describe('Where deliveries are POSTed: https:// (plain http only for test-mode endpoints on servers that allow private networks).');
/** Request bodies; the event kinds come from the catalog every area declares. */
function bodies(types: readonly string[]) {
  const events = z
    .array(z.string().min(1).max(100))
    .min(1, 'subscribe to at least one event kind, or to "*" for all')
    .max(100)
    .describe(`Event kinds to receive (validated against the catalog), or ["${ALL_EVENTS}"] for every kind. Known kinds: ${types.join(', ')}.`);
  const secret = z.string().max(200).describe(`Signing secret: ${SECRET_PREFIX} + base64 of 24–64 random bytes. Omit it to have one generated (shown once, in this answer).`);
  const description = z.string().trim().max(500);

  const createBody = z.strictObject({
    url,
    events,
    secret: secret.optional(),
    enabled: z.boolean().optional().describe('Default true.'),
    description: description.optional(),
    metadata: metadata.optional(),
  });

  const updateBody = z.strictObject({
    url: url.optional(),
    events: events.optional(),
    enabled: z.boolean().optional().describe('true re-enables an endpoint, also one disabled by a 410 answer.'),
    description: description.nullable().optional(),
    metadata: z.record(z.string().min(1).max(40), z.string().max(500).nullable()).optional().describe('Merged; null or "" removes a key.'),
  });

  const rotateBody = z.strictObject({
    secret: secret.optional().describe(`The new secret (${SECRET_PREFIX} + base64 of 24–64 bytes); generated when omitted.`),
  });

  const testBody = z.strictObject({
    event_type: z.enum(types as [string, ...string[]], { error: `expected one of: ${types.join(', ')}` }),
    test_data: z.record(z.string(), z.unknown()).optional().describe("Sent as data.object; without it the catalog's example for event_type is sent."),
  });
  return { createBody, updateBody, rotateBody, testBody };
}

const webhookId = z.strictObject({ webhook_id: z.string().min(1).max(64) });
const deliveryIds = z.strictObject({ webhook_id: z.string().min(1).max(64), delivery_id: z.string().min(1).max(64) });

const listEndpointsQuery = z.strictObject({
  ...listQuery,
  enabled: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
});

const listDeliveriesQuery = z.strictObject({
  ...listQuery,
  status: csv(z.enum(DELIVERY_STATUSES)).optional().describe('pending, delivered or failed; comma-separated for several.'),
  event_type: csv(z.string().min(1)).optional(),
});

const deliveryList = z.object({
  object: z.literal('list'),
  deliveries: z.array(deliverySchema).describe('The page (the spec names it `deliveries`).'),
  data: z.array(deliverySchema).describe('The same page under the list convention\'s name.'),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
  url: z.string(),
});

export function webhookRoutes(ctx: AreaContext) {
  const { createBody, updateBody, rotateBody, testBody } = bodies(ctx.events.types);
  return [
  route({
    method: 'post', path: '/v3/webhooks', operationId: 'createWebhookEndpoint', tag: 'Webhooks',
    summary: 'Create a webhook endpoint (the secret is shown once, in this answer)', permission: 'webhooks:write', status: 201,
    body: createBody, response: endpointSchema,
    async handler({ deps, em, auth, body }) {
      const endpoint = await createEndpoint(em(), auth, body, settings(deps));
      return { body: endpoint, headers: { Location: `/v3/webhooks/${endpoint.id}` } };
    },
  }),
  listRoute({
    path: '/v3/webhooks', operationId: 'listWebhookEndpoints', tag: 'Webhooks',
    summary: 'List webhook endpoints', permission: 'webhooks:read', query: listEndpointsQuery, item: endpointSchema,
    list: ({ em, query }, page) => listEndpoints(em(), query, page),
  }),
  getRoute({
    path: '/v3/webhooks/{webhook_id}', operationId: 'getWebhookEndpoint', tag: 'Webhooks',
    summary: 'Retrieve a webhook endpoint', permission: 'webhooks:read', readOnly: true,
    params: webhookId, response: endpointSchema,
    get: ({ deps, auth, params }) => readEndpoint(deps.orm, auth, params.webhook_id),
  }),
  route({
    method: 'patch', path: '/v3/webhooks/{webhook_id}', operationId: 'updateWebhookEndpoint', tag: 'Webhooks',
    summary: 'Update a webhook endpoint (url, events, enabled, description, metadata)', permission: 'webhooks:write', status: 200,
    params: webhookId, body: updateBody, response: endpointSchema,
    async handler({ deps, em, auth, params, body }) {
      return { body: await updateEndpoint(em(), auth, params.webhook_id, body, settings(deps)) };
    },
  }),
  route({
    method: 'delete', path: '/v3/webhooks/{webhook_id}', operationId: 'deleteWebhookEndpoint', tag: 'Webhooks',
    summary: 'Delete a webhook endpoint and its delivery history', permission: 'webhooks:write', status: 200,
    params: webhookId,
    response: z.object({ id: z.string(), object: z.literal('webhook_endpoint'), deleted: z.literal(true) }),
    async handler({ em, params }) {
      await deleteEndpoint(em(), params.webhook_id);
      return { body: { id: params.webhook_id, object: 'webhook_endpoint', deleted: true } };
    },
  }),
  route({
    method: 'post', path: '/v3/webhooks/{webhook_id}/rotate-secret', operationId: 'rotateWebhookSecret', tag: 'Webhooks',
    summary: 'Rotate the signing secret (the old one keeps signing next to the new one for 24 hours)', permission: 'webhooks:write', status: 200,
    params: webhookId, body: rotateBody, response: endpointSchema,
    async handler({ em, params, body }) {
      return { body: await rotateSecret(em(), params.webhook_id, body.secret) };
    },
  }),
  route({
    method: 'get', path: '/v3/webhooks/{webhook_id}/deliveries', operationId: 'listWebhookDeliveries', tag: 'Webhooks',
    summary: 'List the deliveries to an endpoint', permission: 'webhooks:read', status: 200,
    params: webhookId, query: listDeliveriesQuery, response: deliveryList,
    async handler({ em, req, params, query }) {
      const page = pageOf(query);
      const rows = await listDeliveries(em(), params.webhook_id, query, { where: idAfter(page), direction: page.direction, limit: page.limit });
      const { body, headers } = listDocument(req, rows, page);
      return { body: { object: 'list', deliveries: body.data, data: body.data, has_more: body.has_more, next_cursor: body.next_cursor, url: body.url }, headers };
    },
  }),
  getRoute({
    path: '/v3/webhooks/{webhook_id}/deliveries/{delivery_id}', operationId: 'getWebhookDelivery', tag: 'Webhooks',
    summary: 'Retrieve a delivery with every attempt', permission: 'webhooks:read', readOnly: true,
    params: deliveryIds, response: deliverySchema.extend({ attempt_history: z.array(attemptSchema) }),
    get: ({ em, params }) => getDelivery(em(), params.webhook_id, params.delivery_id),
  }),
  route({
    method: 'post', path: '/v3/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', operationId: 'retryWebhookDelivery', tag: 'Webhooks',
    summary: 'Replay a delivery now (same webhook-id)', permission: 'webhooks:write', status: 202, temporal: true,
    params: deliveryIds, body: z.strictObject({}), response: deliverySchema,
    async handler({ deps, em, auth, params }) {
      const delivery = await replayDelivery(em(), auth, starter(deps), params.webhook_id, params.delivery_id);
      return { body: delivery, headers: { Location: `/v3/webhooks/${params.webhook_id}/deliveries/${delivery.id}` } };
    },
  }),
  route({
    method: 'post', path: '/v3/webhooks/{webhook_id}/test', operationId: 'sendWebhookTestEvent', tag: 'Webhooks',
    summary: 'Send a test event to the endpoint now and return the delivery', permission: 'webhooks:write', status: 200, temporal: true,
      // The answer waits for the one attempt (at most the delivery timeout and 5 s).
      temporalWaitMs: (deps) => deps.config.WEBHOOK_TIMEOUT_MS + 5000,
    params: webhookId, body: testBody, response: deliverySchema,
    responses: { 202: { description: 'Accepted: the receiver has not answered yet; poll Location', schema: deliverySchema } },
    async handler({ deps, em, auth, params, body, requestId }) {
      const { delivery, finished } = await sendTestEvent(em(), auth, starter(deps), params.webhook_id,
        { kind: deps.events.get(body.event_type)!, testData: body.test_data }, requestId, deps.config.WEBHOOK_TIMEOUT_MS + 5000);
      const location = `/v3/webhooks/${params.webhook_id}/deliveries/${delivery.id}`;
      return finished ? { body: delivery, headers: { Location: location } } : { status: 202, body: delivery, headers: { Location: location } };
    },
  }),
];
}
