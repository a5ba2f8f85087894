import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { conflict } from '../../platform/errors.ts';
import { searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { orderWorkflow } from '../../workflows/commerce/order.ts';
import {
  cancelOrderUpdate, fulfillOrderUpdate, orderCreatedUpdate, orderStateQuery, orderWorkflowId, type OrderDraft,
} from '../../workflows/commerce/shared.ts';
import type { EventConsumer, WorkflowStartRequest } from '../events/consumers.ts';
import { readScopedById, type Scope } from '../scope.ts';
import { Order } from './entities.ts';
import { draftOfOrder, draftOrder, findOrder, orderView, writeOrder, type OrderInput, type OrderView } from './orders.ts';

/**
 * How orders meet Temporal. The API checks and prices the order (422), then reserves the stock and
 * writes the row and `order.created` in one transaction (409 `insufficient_stock`: nothing
 * written) and answers 201 — no Temporal round trip in the request. `order.created` is the
 * workflow's start in the outbox: the commerce consumer below has the event dispatcher start
 * `order-<order id>` (a deterministic id, so a repeated dispatch starts nothing twice), and the
 * workflow's first step stamps `workflow_confirmed_at`. Anything that must go through the
 * workflow before the dispatcher got to it (fulfil, cancel, a shipment's label) starts it itself
 * (`withOrderWorkflow`).
 *
 * `placeOrder` places one (POST /v3/orders). `claimedId` is the id an Idempotency-Key's claim chose: an
 * order with it exists when an earlier attempt placed it, and is answered as it is. Without a key
 * there is nothing to look for, and the order gets a new id.
 */
export async function placeOrder(
  em: EntityManager, caller: Scope & { keyId: string }, input: OrderInput, requestId: string | null, claimedId?: string,
): Promise<OrderView> {
  if (claimedId) {
    const existing = await readScopedById(em, caller, Order, claimedId);
    if (existing) return orderView(existing);
  }
  return writeOrder(em, caller, await draftOrder(em, caller, input, requestId, claimedId), { actor: `key:${caller.keyId}` });
}

function orderStart(draft: OrderDraft) {
  return {
    workflowType: 'orderWorkflow',
    workflowId: orderWorkflowId(draft.orderId),
    args: [draft] as [OrderDraft],
    searchAttributes: searchAttributes({ accountId: draft.accountId, livemode: draft.livemode, customerId: draft.customerId, resourceId: draft.orderId, status: 'processing' }),
  };
}

/** The outbox consumer that starts each order's workflow from its `order.created`. */
export const orderWorkflowConsumer: EventConsumer = {
  name: 'commerce-orders',
  async plan(event): Promise<WorkflowStartRequest[]> {
    const order = event.data.object as Partial<OrderView> | undefined;
    // Only an order's own event (writeOrder's), not a hand-made one of the type (a webhook test's).
    if (event.type !== 'order.created' || order?.object !== 'order' || !Array.isArray(order.line_items)) return [];
    const draft = draftOfOrder(order as OrderView, event.accountId, event.requestId);
    return [{ ...orderStart(draft), area: 'commerce' }];
  },
};

/**
 * Sends something to an order's workflow (`send` gets its handle). An order the dispatcher has not
 * started the workflow of yet (placed a moment ago, or while Temporal was down) gets it started
 * first, with the same id and input the dispatcher uses (update-with-start of `orderCreated`,
 * `USE_EXISTING`: whichever start comes second joins the first), then `send` runs again.
 */
export async function withOrderWorkflow<T>(
  temporal: Pick<TemporalHandle, 'client' | 'taskQueue'>, em: EntityManager, orderId: string, send: (handle: WorkflowHandle<typeof orderWorkflow>) => Promise<T>,
): Promise<T> {
  const handle = temporal.client.workflow.getHandle<typeof orderWorkflow>(orderWorkflowId(orderId));
  let missing: WorkflowNotFoundError;
  try {
    return await send(handle);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    missing = err;
  }
  const order = await findOrder(em, orderId);
  const draft = draftOfOrder(orderView(order), order.accountId, null);
  await startResource<typeof orderWorkflow, OrderView, []>(temporal, {
    ...orderStart(draft), taskQueue: temporal.taskQueue('commerce'), update: orderCreatedUpdate, updateArgs: [],
  }).catch((err: unknown) => {
    // It ran and finished already (a closed workflow also answers "not found" to an update).
    throw err instanceof WorkflowExecutionAlreadyStartedError ? missing : err;
  });
  return send(handle);
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
  await sendUpdate(() => withOrderWorkflow(temporal, em.fork(), order.id, (workflow) => (transition.kind === 'fulfill'
    ? workflow.executeUpdate(fulfillOrderUpdate, { args: [{ trackingNumber: transition.trackingNumber, carrier: transition.carrier, requestId, idempotencyKey }] })
    : workflow.executeUpdate(cancelOrderUpdate, { args: [{ reason: transition.reason, requestId, idempotencyKey }] }))), {
    resource: `Order ${order.id}`,
    suggestion: 'Fetch the order to see its current status; retry only if it is still processing.',
    currentState: async () => (await findOrder(em.fork(), id)).status,
  });
  em.clear();
  return orderView(await findOrder(em, id));
}
