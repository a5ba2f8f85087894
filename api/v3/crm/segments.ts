import { z } from 'zod';
import { customerSchema } from '../../../domain/customers/public.ts';
import { segmentSchema } from '../../../domain/crm/schemas.ts';
import { ruleGroupSchema } from '../../../domain/crm/segment-rules.ts';
import {
  archiveSegment, createSegment, listSegmentCustomers, listSegments, readSegment, refreshSegment, updateSegment,
} from '../../../domain/crm/segments.ts';
import { csv, metadata } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';

const segmentId = z.strictObject({ segment_id: z.string().min(1).max(64) });
const name = z.string().trim().min(1).max(200);
const description = z.string().max(2000).nullable();
/** The wait for the evaluation (EVALUATION_WAIT_MS in the domain) on top of Temporal's call deadline. */
const waitMs = () => 12_000;

export const segmentRoutes = [
  route({
    method: 'post', path: '/v3/segments', operationId: 'createSegment', tag: 'Customers',
    summary: 'Create a customer segment: rules over customer fields and metrics, evaluated at once, on events and nightly',
    permission: 'crm:write', status: 201, temporal: true, temporalWaitMs: waitMs,
    body: z.strictObject({ name, description: description.optional(), rules: ruleGroupSchema, metadata: metadata.optional() }),
    response: segmentSchema,
    async handler({ deps, em, auth, body, resourceId }) {
      const segment = await createSegment(deps, em(), auth, await resourceId('segment'), body);
      return { body: segment, headers: { Location: `/v3/segments/${segment.id}` } };
    },
  }),
  listRoute({
    path: '/v3/segments', operationId: 'listSegments', tag: 'Customers', summary: 'List segments', permission: 'crm:read',
    query: z.strictObject({ ...listQuery, status: csv(z.enum(['active', 'archived'])).optional() }),
    item: segmentSchema,
    list: ({ em, query }, page) => listSegments(em(), query, page),
  }),
  getRoute({
    path: '/v3/segments/{segment_id}', operationId: 'getSegment', tag: 'Customers', summary: 'Retrieve a segment',
    permission: 'crm:read', readOnly: true, params: segmentId, response: segmentSchema,
    get: ({ deps, auth, params }) => readSegment(deps.orm, auth, params.segment_id),
  }),
  route({
    method: 'patch', path: '/v3/segments/{segment_id}', operationId: 'updateSegment', tag: 'Customers',
    summary: 'Rename a segment or change its rules (new rules are evaluated at once)', permission: 'crm:write', status: 200,
    temporal: true, temporalWaitMs: waitMs, params: segmentId,
    body: z.strictObject({
      name: name.optional(), description: description.optional(), rules: ruleGroupSchema.optional(), metadata: metadata.optional(),
    }),
    response: segmentSchema,
    async handler({ deps, em, auth, params, body }) {
      return { body: await updateSegment(deps, em(), auth, params.segment_id, body) };
    },
  }),
  route({
    method: 'post', path: '/v3/segments/{segment_id}/refresh', operationId: 'refreshSegment', tag: 'Customers',
    summary: 'Evaluate a segment now (as the nightly schedule does)', permission: 'crm:write', status: 200,
    temporal: true, temporalWaitMs: waitMs, params: segmentId, body: z.strictObject({}).optional(), response: segmentSchema,
    async handler({ deps, em, auth, params, idempotencyKey, requestId }) {
      return { body: await refreshSegment(deps, em(), auth, params.segment_id, idempotencyKey ?? requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/segments/{segment_id}/archive', operationId: 'archiveSegment', tag: 'Customers',
    summary: 'Archive a segment: no more evaluations or events; its members are cleared', permission: 'crm:write', status: 200,
    temporal: true, params: segmentId, body: z.strictObject({}).optional(), response: segmentSchema,
    async handler({ deps, em, params }) {
      return { body: await archiveSegment(deps, em(), params.segment_id) };
    },
  }),
  listRoute({
    path: '/v3/segments/{segment_id}/customers', operationId: 'listSegmentCustomers', tag: 'Customers',
    summary: "A segment's members (ordered by customer id)", permission: 'crm:read',
    params: segmentId, item: customerSchema,
    list: ({ em, params }, page) => listSegmentCustomers(em(), params.segment_id, page),
  }),
];
