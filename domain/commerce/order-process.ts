import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict } from '../../platform/errors.ts';
import { searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { orderWorkflow } from '../../workflows/commerce/order.ts';
import {
  cancelOrderUpdate, fulfillOrderUpdate, orderCreatedUpdate, orderStateQuery, orderWorkflowId,
} from '../../workflows/commerce/shared.ts';
import type { Scope } from '../scope.ts';
import { Order } from './entities.ts';
import { draftOrder, findOrder, orderView, type OrderInput, type OrderView } from './orders.ts';

/**
 * How orders meet Temporal, the way every workflow-backed resource does: the API checks and
 * prices the order (422 before anything starts), then starts `order-<order id>` with the
 * `orderCreated` update (update-with-start). The workflow's first activity reserves the stock and
 * writes the row and `order.created` in one transaction; the update answers with the order, or
 * with the refusal (409 `insufficient_stock`), in which case nothing was written and the workflow
 * ends. The API never writes an order row itself, so no order exists without its workflow.
 */
export async function placeOrder(
  temporal: TemporalHandle, em: EntityManager, scope: Scope, input: OrderInput, requestId: string | null, orderId?: string,
): Promise<OrderView> {
  // The id comes from the Idempotency-Key's claim: an order with it exists when an earlier attempt placed it.
  if (orderId) {
    const existing = await em.findOne(Order, { id: orderId });
    if (existing) return orderView(existing);
  }
  const draft = await draftOrder(em, scope, input, requestId, orderId);
  return sendUpdate(() => startResource<typeof orderWorkflow, OrderView, []>(temporal, {
    workflowType: 'orderWorkflow',
    workflowId: orderWorkflowId(draft.orderId),
    taskQueue: temporal.taskQueue('commerce'),
    args: [draft],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: draft.customerId, resourceId: draft.orderId, status: 'processing' }),
    update: orderCreatedUpdate,
    updateArgs: [],
  }), {
    resource: `Order ${draft.orderId}`,
    suggestion: 'Check the order\'s line items and the stock, then send the request again.',
    currentState: async () => 'processing',
  });
}

export type OrderTransition =
  | { kind: 'fulfill'; trackingNumber: string | null; carrier: string | null }
  | { kind: 'cancel'; reason: string | null };

/**
 * Fulfils or cancels an order through its workflow (an update: the workflow validates the
 * transition, then its activity changes the row and stock). An order already in another state is
 * 409 `invalid_state_transition`.
 */
export async function transitionOrder(
  temporal: TemporalHandle, em: EntityManager, id: string, transition: OrderTransition, requestId: string, idempotencyKey: string | null = null,
): Promise<OrderView> {
  const order = await findOrder(em, id);
  const action = transition.kind === 'fulfill' ? 'fulfilled' : 'canceled';
  const handle = temporal.client.workflow.getHandle<typeof orderWorkflow>(order.workflowId);
  if (order.status !== 'processing') {
    // Applied already by this Idempotency-Key (the answer was lost in a crash): the original success.
    // The workflow remembers the key (a finished workflow is asked too: a query replays its history).
    if (idempotencyKey !== null) {
      const applied = await handle.query(orderStateQuery).then((s) => s.appliedKeys?.[transition.kind], () => undefined);
      if (applied === idempotencyKey) return orderView(order);
    }
    throw conflict('invalid_state_transition', `Order ${order.id} is ${order.status}; it cannot be ${action}.`,
      `Only a processing order can be ${action}.`, { current_state: order.status });
  }
  await sendUpdate(() => (transition.kind === 'fulfill'
    ? handle.executeUpdate(fulfillOrderUpdate, { args: [{ trackingNumber: transition.trackingNumber, carrier: transition.carrier, requestId, idempotencyKey }] })
    : handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: transition.reason, requestId, idempotencyKey }] })), {
    resource: `Order ${order.id}`,
    suggestion: 'Fetch the order to see its current status; retry only if it is still processing.',
    currentState: async () => (await findOrder(em.fork(), id)).status,
  });
  em.clear();
  return orderView(await findOrder(em, id));
}
