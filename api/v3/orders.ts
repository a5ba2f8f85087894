import { z } from 'zod';
import {
  FULFILLMENT_STATUSES, ORDER_STATUSES, ORDER_STATUS_GROUPS, PAYMENT_STATUSES, type OrderStatusGroup,
} from '../../domain/commerce/entities.ts';
import { startOrderWorkflow, transitionOrder } from '../../domain/commerce/order-process.ts';
import { createOrder, findOrder, listOrders, markOrderPaid, orderView, orderWorkflowInput, updateOrder } from '../../domain/commerce/orders.ts';
import { csv, dateOrTimestamp, metadata } from '../http/schemas.ts';
import { idAfter, listDocument, listOf, listQuery, pageOf } from '../http/pagination.ts';
import { route } from '../http/route.ts';
import { address, currency, sku } from './commerce-schemas.ts';

const lineItemSchema = z.object({
  product_id: z.string(),
  sku: z.string(),
  name: z.string(),
  variant: z.string().nullable(),
  quantity: z.number().int(),
  unit_price: z.number().int().describe('Minor units of the order currency.'),
  amount: z.number().int(),
  allocations: z.array(z.object({ warehouse_id: z.string(), quantity: z.number().int() })).describe('Where the units are reserved.'),
});

export const orderSchema = z
  .object({
    id: z.string(),
    object: z.literal('order'),
    livemode: z.boolean(),
    store_id: z.string(),
    customer_id: z.string(),
    status: z.enum(ORDER_STATUSES),
    payment_status: z.enum(PAYMENT_STATUSES),
    total_amount: z.number().int().describe('Minor units of `currency`.'),
    currency: z.string(),
    line_items: z.array(lineItemSchema),
    shipping_address: address,
    fulfillment: z.object({
      status: z.enum(FULFILLMENT_STATUSES),
      tracking_number: z.string().nullable(),
      carrier: z.string().nullable(),
      deadline: z.iso.datetime(),
      fulfilled_at: z.iso.datetime().nullable(),
    }),
    workflow_id: z.string(),
    canceled_at: z.iso.datetime().nullable(),
    cancellation_reason: z.string().nullable(),
    paid_at: z.iso.datetime().nullable(),
    payment_id: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Order' });

const createOrderBody = z.strictObject({
  store_id: z.string().min(1).max(64),
  customer_id: z.string().min(1).max(64),
  currency: currency.describe('Lines are priced in this currency (fixed price, or converted with the stored exchange rate).'),
  line_items: z.array(z.strictObject({
    sku,
    quantity: z.number().int('quantities are whole units').min(1).max(10_000),
    variant: z.string().min(1).max(100).optional().describe("Name of one of the product's variants (its price applies)."),
  })).min(1, 'an order needs at least one line item').max(100),
  shipping_address: address,
  payment_status: z.enum(['unpaid', 'paid']).optional().describe('`paid` for an order paid at checkout; default unpaid.'),
  payment_id: z.string().min(1).max(64).optional().describe('The payment (`pay_…`) that paid it, if any.'),
  metadata: metadata.optional(),
});

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
    summary: 'Place an order: reserves stock atomically and starts its fulfilment workflow',
    permission: 'commerce:write', status: 201, temporal: true,
    body: createOrderBody, response: orderSchema,
    async handler({ deps, em, auth, body, requestId }) {
      const order = await createOrder(em(), auth, body, requestId);
      try {
        await startOrderWorkflow(deps.temporal, orderWorkflowInput(order));
      } catch (err) {
        // The order is committed; the outbox dispatcher starts the workflow from order.created.
        deps.logger.warn('order workflow start deferred to the outbox', { order_id: order.id, error: err });
      }
      return { body: orderView(order), headers: { Location: `/v3/orders/${order.id}` } };
    },
  }),
  route({
    method: 'get', path: '/v3/orders/{order_id}', operationId: 'getOrder', tag: 'Commerce',
    summary: 'Retrieve an order', permission: 'commerce:read', status: 200,
    params: orderId, response: orderSchema,
    async handler({ em, params }) {
      return { body: orderView(await findOrder(em(), params.order_id)) };
    },
  }),
  route({
    method: 'get', path: '/v3/orders', operationId: 'listOrders', tag: 'Commerce',
    summary: 'List orders, filtered by created date range, status or status group, customer and store',
    permission: 'commerce:read', status: 200,
    query: listOrdersQuery, response: listOf(orderSchema),
    async handler({ em, req, query }) {
      const page = pageOf(query);
      return listDocument(req, await listOrders(em(), query, { where: idAfter(page), direction: page.direction, limit: page.limit }), page);
    },
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
    async handler({ deps, em, params, body, requestId }) {
      return { body: await transitionOrder(deps.temporal, em(), params.order_id, { kind: 'fulfill', trackingNumber: body.tracking_number ?? null, carrier: body.carrier ?? null }, requestId) };
    },
  }),
  route({
    method: 'post', path: '/v3/orders/{order_id}/cancel', operationId: 'cancelOrder', tag: 'Commerce',
    summary: 'Cancel a processing order and release its reserved stock', permission: 'commerce:write', status: 200, temporal: true,
    params: orderId,
    body: z.strictObject({ reason: z.string().min(1).max(500).optional() }),
    response: orderSchema,
    async handler({ deps, em, params, body, requestId }) {
      return { body: await transitionOrder(deps.temporal, em(), params.order_id, { kind: 'cancel', reason: body.reason ?? null }, requestId) };
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
