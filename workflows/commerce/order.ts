import { ActivityFailure, ApplicationFailure, allHandlersFinished, condition, patched, setHandler } from '@temporalio/workflow';
import type { CommerceActivities } from '../../activities/commerce/index.ts';
import type { OrderView } from '../../domain/commerce/orders.ts';
import { REFUSALS, REFUSAL_TYPES, refuse } from '../kit/failures.ts';
import {
  cancelOrderUpdate, fulfillOrderUpdate, orderCreatedUpdate, orderStateQuery, recordOrderShipmentUpdate,
  type OrderWorkflowInput, type OrderWorkflowState,
} from './shared.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import { stepsWithLocalFirstWrite } from '../kit/steps.ts';

/**
 * Refusals (a 4xx ApiError, e.g. not enough stock) are non-retryable: the workers' activity
 * interceptor makes them refusals (worker/activity-refusals.ts), also listed here. No attempt limit
 * otherwise, on purpose: what is retried is an outage, and giving up would leave the order (stock
 * reserved, updates waiting) with nobody to finish it; it resumes when the database is back.
 */
const STEPS = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: [...REFUSAL_TYPES] },
};
/**
 * The first step (reserve the stock, write the order; a rerun finds the order) runs locally, in the
 * first workflow task (workflows/kit/steps.ts): the `orderCreated` update is answered when that
 * task completes.
 */
const { steps: acts, firstWrite } = stepsWithLocalFirstWrite<CommerceActivities>(STEPS, 'order-create-locally');

/**
 * One order's life. The API starts it with the `orderCreated` update (update-with-start); its
 * first activity reserves the stock and writes the row and `order.created` in one transaction, and
 * the update answers with the order. A refusal there (not enough stock) fails the update and ends
 * the workflow with nothing written. Then `processing` (stock reserved) until the order is
 * fulfilled or canceled; if the fulfilment deadline passes first, `order.fulfillment.delayed` is
 * recorded once and the order keeps waiting. Fulfil and cancel are updates with validators, so an
 * impossible transition is rejected (409) before anything runs; each runs an activity that changes
 * the order row and stock in one transaction under a row lock, so the row and the workflow agree.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowState> {
  const ref = { orderId: input.orderId, accountId: input.accountId, livemode: input.livemode };
  const state: OrderWorkflowState = { status: 'processing', fulfillment: 'pending', busy: false };
  let created: OrderView | undefined;
  let rejected: ApplicationFailure | undefined;

  const mustBeOpen = () => {
    if (state.status !== 'processing') {
      throw refuse(REFUSALS.invalidTransition, `the order is ${state.status}`, { current_state: state.status });
    }
    if (state.busy || !created) {
      throw refuse(REFUSALS.invalidTransition, 'another change to this order is in progress', { current_state: state.status });
    }
  };

  // A transition retried with the Idempotency-Key that applied it (its answer was lost) succeeds
  // again with the current state, and changes nothing.
  const appliedBy = (kind: 'fulfill' | 'cancel', key: string | null | undefined) => !!key && state.appliedKeys?.[kind] === key;
  const remember = (kind: 'fulfill' | 'cancel', key: string | null | undefined) => {
    if (key) state.appliedKeys = { ...state.appliedKeys, [kind]: key };
  };

  setHandler(orderStateQuery, () => ({ ...state }));
  setHandler(orderCreatedUpdate, async () => {
    await condition(() => created !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    return created!;
  });
  /**
   * Fulfilment and cancellation: one at a time (busy), on an open order, the state updated from the
   * activity's result. A retry with the Idempotency-Key that applied the transition answers the
   * current state and runs nothing.
   */
  const transition = async (
    kind: 'fulfill' | 'cancel', key: string | null | undefined,
    act: () => Promise<Pick<OrderWorkflowState, 'status' | 'fulfillment'>>,
  ): Promise<OrderWorkflowState> => {
    if (appliedBy(kind, key) && patched('order-idempotent-transitions')) return { ...state };
    state.busy = true;
    try {
      const { status, fulfillment } = await act();
      Object.assign(state, { status, fulfillment });
      remember(kind, key);
      recordStatus(state.status);
      return { ...state };
    } finally {
      state.busy = false;
    }
  };
  setHandler(fulfillOrderUpdate, ({ idempotencyKey, ...args }) => transition('fulfill', idempotencyKey, () => acts.fulfillOrder({ ...ref, ...args })),
    { validator: (args) => (appliedBy('fulfill', args.idempotencyKey) ? undefined : mustBeOpen()) });
  setHandler(cancelOrderUpdate, ({ idempotencyKey, ...args }) => transition('cancel', idempotencyKey, () => acts.cancelOrder({ ...ref, ...args })),
    { validator: (args) => (appliedBy('cancel', args.idempotencyKey) ? undefined : mustBeOpen()) });

  // A shipment's label (shipping area): the row shows its tracking number; the status does not change.
  setHandler(recordOrderShipmentUpdate, async (args) => {
    const { status, fulfillment } = await acts.recordOrderShipment({ ...ref, ...args });
    if (state.status === 'processing' && status === 'processing') state.fulfillment = fulfillment;
    return { ...state };
  }, {
    validator: (_args) => {
      if (state.status !== 'processing' || !created) throw refuse(REFUSALS.invalidTransition, `the order is ${state.status}`, { current_state: state.status });
    },
  });

  try {
    created = await firstWrite().createOrder(input);
  } catch (err) {
    // Only a refusal gets here (anything else is retried): nothing was written.
    const cause = err instanceof ActivityFailure ? err.cause : err;
    rejected = cause instanceof ApplicationFailure ? cause : refuse(REFUSALS.rejected, 'The order could not be placed.');
    await condition(allHandlersFinished);
    throw rejected;
  }
  if (created.status !== 'processing') {
    // Started for an order that is settled already (a start from its order.created that came again
    // after the first workflow's history was gone): there is nothing left to run.
    Object.assign(state, { status: created.status, fulfillment: created.fulfillment.status });
    await condition(allHandlersFinished);
    return { ...state };
  }

  if (state.fulfillment !== 'delayed') {
    const remaining = new Date(input.fulfillmentDeadline).getTime() - Date.now();
    const settled = remaining > 0 ? await condition(() => state.status !== 'processing', remaining) : false;
    if (!settled) {
      await condition(() => !state.busy);
      if (state.status === 'processing') {
        const delayed = await acts.markFulfillmentDelayed(ref);
        if (state.status === 'processing') state.fulfillment = delayed.fulfillment;
      }
    }
  }
  await condition(() => state.status !== 'processing');
  await condition(allHandlersFinished);
  return { ...state };
}
