import { z } from 'zod';
import { ORDER_STATUS_GROUPS, type OrderStatusGroup } from '../../../domain/commerce/entities.ts';
import { ORDER_STATUSES, PAYMENT_STATUSES, orderSchema } from '../../../domain/commerce/schemas.ts';
import { placeOrder, transitionOrder } from '../../../domain/commerce/order-process.ts';
import { createOrderBody } from '../../../domain/commerce/requests.ts';
import { listOrders, markOrderPaid, readOrder, updateOrder } from '../../../domain/commerce/orders.ts';
import { csv, dateOrTimestamp } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { address } from './schemas.ts';

const orderId = z.strictObject({ order_id: z.string().min(1).max(64) });

const groups = Object.entries(ORDER_STATUS_GROUPS).map(([g, s]) => `${g} = {${s.join(', ')}}`).join('; ');
const listOrdersQuery = z.strictObject({
  ...listQuery,
  status: csv(z.enum(ORDER_STATUSES)).optional().describe('Exact statuses, comma-separated.'),
  status_group: csv(z.enum(Object.keys(ORDER_STATUS_GROUPS) as [OrderStatusGroup, ...OrderStatusGroup[]])).optional()
    .describe(`Status groups, comma-separated: ${groups}.`),
  customer_id: csv(z.string().min(1)).optional(),
  store_id: csv(z.string().min(1)).optional(),
  payment_status: csv(z.enum(PAYMENT_STATUSES)).optional(),
  created_gte: dateOrTimestamp('start').optional(),
  created_lte: dateOrTimestamp('end').optional(),
});

const updateOrderBody = z.strictObject({
  shipping_address: address.optional().describe('Only while the order is processing.'),
  metadata: z.record(z.string().min(1).max(40), z.string().max(500).nullable()).optional().describe('Merged; null or "" removes a key.'),
});

export const orderRoutes = [
  route({
    method: 'post', path: '/v3/orders', operationId: 'createOrder', tag: 'Commerce',
    summary: 'Place an order: reserves stock atomically; its fulfilment workflow starts from order.created',
    permission: 'commerce:write', status: 201,
    body: createOrderBody, response: orderSchema,
    async handler({ em, auth, body, requestId, resourceId, idempotencyKey }) {
      const order = await placeOrder(em(), auth, body, requestId, idempotencyKey === null ? undefined : await resourceId('order'));
      return { body: order, headers: { Location: `/v3/orders/${order.id}` } };
    },
  }),
  getRoute({
    path: '/v3/orders/{order_id}', operationId: 'getOrder', tag: 'Commerce',
    summary: 'Retrieve an order', permission: 'commerce:read', readOnly: true,
    params: orderId, response: orderSchema,
    get: ({ deps, auth, params }) => readOrder(deps.orm, auth, params.order_id),
  }),
  listRoute({
    path: '/v3/orders', operationId: 'listOrders', tag: 'Commerce',
    summary: 'List orders, filtered by created date range, status or status group, customer and store',
    permission: 'commerce:read', query: listOrdersQuery, item: orderSchema,
    list: ({ em, query }, page) => listOrders(em(), query, page),
  }),
  route({
    method: 'patch', path: '/v3/orders/{order_id}', operationId: 'updateOrder', tag: 'Commerce',
    summary: 'Update an order (metadata, shipping address); concurrent updates never lose a write',
    permission: 'commerce:write', status: 200,
    params: orderId, body: updateOrderBody, response: orderSchema,
    async handler({ em, auth, params, body, requestId }) {
      return { body: await updateOrder(em(), auth, params.order_id, body, requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/orders/{order_id}/fulfill', operationId: 'fulfillOrder', tag: 'Commerce',
    summary: 'Mark a processing order fulfilled (records order.fulfilled)', permission: 'commerce:write', status: 200, temporal: true,
    params: orderId,
    body: z.strictObject({ tracking_number: z.string().min(1).max(100).optional(), carrier: z.string().min(1).max(100).optional() }),
    response: orderSchema,
    async handler({ deps, em, params, body, requestId, idempotencyKey }) {
      return { body: await transitionOrder(deps.temporal, em(), params.order_id, { kind: 'fulfill', trackingNumber: body.tracking_number ?? null, carrier: body.carrier ?? null }, requestId, idempotencyKey) };
    },
  }),
  route({
    method: 'post', path: '/v3/orders/{order_id}/cancel', operationId: 'cancelOrder', tag: 'Commerce',
    summary: 'Cancel a processing order and release its reserved stock', permission: 'commerce:write', status: 200, temporal: true,
    params: orderId,
    body: z.strictObject({ reason: z.string().min(1).max(500).optional() }),
    response: orderSchema,
    async handler({ deps, em, params, body, requestId, idempotencyKey }) {
      return { body: await transitionOrder(deps.temporal, em(), params.order_id, { kind: 'cancel', reason: body.reason ?? null }, requestId, idempotencyKey) };
    },
  }),
  route({
    method: 'post', path: '/v3/orders/{order_id}/pay', operationId: 'markOrderPaid', tag: 'Commerce',
    summary: 'Record that an order was paid (counts toward the customer lifetime value)', permission: 'commerce:write', status: 200,
    params: orderId,
    body: z.strictObject({ payment_id: z.string().min(1).max(64).optional() }),
    response: orderSchema,
    async handler({ em, auth, params, body, requestId }) {
      return { body: await markOrderPaid(em(), auth, params.order_id, body.payment_id ?? null, requestId) };
    },
  }),
];
