import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError,
} from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { ApiError, conflict } from '../../platform/errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { orderWorkflow } from '../../workflows/commerce/order.ts';
import {
  INVALID_TRANSITION, cancelOrderUpdate, fulfillOrderUpdate, orderWorkflowId, type OrderWorkflowInput,
} from '../../workflows/commerce/shared.ts';
import type { EventConsumer, WorkflowStartRequest } from '../events/consumers.ts';
import { findOrder, orderView, orderWorkflowInput, type OrderView } from './orders.ts';

/**
 * How orders meet Temporal. The order row, its stock reservations and `order.created` commit in
 * one transaction; only then is the workflow `order-<order id>` started. That id is deterministic
 * and duplicates are rejected, so the start can be repeated safely by anyone:
 *
 * 1. the API starts it right after the commit (the fast path);
 * 2. the outbox dispatcher starts it from `order.created` (`orderWorkflowConsumer`), so an API
 *    process that dies between commit and start leaves no order without its workflow;
 * 3. fulfil and cancel start it if it is missing before sending their update.
 *
 * The workflow's first activity stamps `workflow_confirmed_at` on the row, so an order whose
 * workflow never ran is visible in SQL.
 */

export function orderSearchAttributes(input: OrderWorkflowInput): Record<string, string[]> {
  return {
    BpAccountId: [input.accountId],
    BpMode: [input.livemode ? 'live' : 'test'],
    BpCustomerId: [input.customerId],
    BpResourceId: [input.orderId],
  };
}

export function orderWorkflowStart(input: OrderWorkflowInput): WorkflowStartRequest {
  return {
    workflowType: 'orderWorkflow',
    workflowId: orderWorkflowId(input.orderId),
    area: 'commerce',
    args: [input],
    searchAttributes: orderSearchAttributes(input),
  };
}

/** Starts the order's workflow; true if this call started it, false if it already existed. */
export async function startOrderWorkflow(temporal: TemporalHandle, input: OrderWorkflowInput): Promise<boolean> {
  try {
    await temporal.client.workflow.start<typeof orderWorkflow>('orderWorkflow', {
      workflowId: orderWorkflowId(input.orderId),
      taskQueue: temporal.taskQueue('commerce'),
      args: [input],
      searchAttributes: orderSearchAttributes(input),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/** The outbox consumer that guarantees every order gets its workflow (step 2 above). */
export const orderWorkflowConsumer: EventConsumer = {
  name: 'commerce-order-workflow',
  async plan(event) {
    if (event.type !== 'order.created') return [];
    const order = event.data.object as Partial<OrderView> | undefined;
    if (!order?.id || !order.customer_id || !order.fulfillment?.deadline) return [];
    return [orderWorkflowStart({
      orderId: order.id, accountId: event.accountId, livemode: event.livemode, customerId: order.customer_id,
      fulfillmentDeadline: order.fulfillment.deadline,
    })];
  },
};

function applicationFailure(err: unknown): ApplicationFailure | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e;
  }
  return undefined;
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
  temporal: TemporalHandle, em: EntityManager, id: string, transition: OrderTransition, requestId: string,
): Promise<OrderView> {
  const order = await findOrder(em, id);
  const action = transition.kind === 'fulfill' ? 'fulfilled' : 'canceled';
  if (order.status !== 'processing') {
    throw conflict('invalid_state_transition', `Order ${order.id} is ${order.status}; it cannot be ${action}.`,
      `Only a processing order can be ${action}.`, { current_state: order.status });
  }
  const send = () => {
    const handle = temporal.client.workflow.getHandle<typeof orderWorkflow>(order.workflowId);
    return transition.kind === 'fulfill'
      ? handle.executeUpdate(fulfillOrderUpdate, { args: [{ trackingNumber: transition.trackingNumber, carrier: transition.carrier, requestId }] })
      : handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: transition.reason, requestId }] });
  };
  try {
    try {
      await send();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await startOrderWorkflow(temporal, orderWorkflowInput(order));
      await send();
    }
  } catch (err) {
    const failure = err instanceof WorkflowUpdateFailedError ? applicationFailure(err) : undefined;
    if (failure?.type === INVALID_TRANSITION) {
      em.clear();
      const fresh = await findOrder(em, id);
      throw conflict('invalid_state_transition', `Order ${order.id} cannot be ${action} now: ${failure.message}.`,
        'Fetch the order to see its current status; retry only if it is still processing.', { current_state: fresh.status });
    }
    if (failure) {
      throw new ApiError({ status: 409, code: failure.type ?? 'order_update_failed', title: 'Conflict', detail: failure.message, suggestion: 'Fetch the order to see its current state.' });
    }
    throw err;
  }
  em.clear();
  return orderView(await findOrder(em, id));
}
