import { ApplicationFailure, allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { CommerceActivities } from '../../activities/commerce.ts';
import {
  INVALID_TRANSITION, cancelOrderUpdate, fulfillOrderUpdate, orderStateQuery,
  type OrderWorkflowInput, type OrderWorkflowState,
} from './shared.ts';

const acts = proxyActivities<CommerceActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: [INVALID_TRANSITION] },
});

/**
 * One order's life: `processing` (stock reserved) until it is fulfilled or canceled. If the
 * fulfilment deadline passes first, `order.fulfillment.delayed` is recorded once and the order keeps
 * waiting. Fulfil and cancel are updates with validators, so an impossible transition is rejected
 * (409) before anything runs; each runs an activity that changes the order row and stock in one
 * transaction under a row lock, so the row and the workflow agree.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowState> {
  const ref = { orderId: input.orderId, accountId: input.accountId, livemode: input.livemode };
  const state: OrderWorkflowState = { status: 'processing', fulfillment: 'pending', busy: false };

  const mustBeOpen = () => {
    if (state.status !== 'processing') {
      throw ApplicationFailure.create({ type: INVALID_TRANSITION, message: `the order is ${state.status}`, details: [state.status] });
    }
    if (state.busy) {
      throw ApplicationFailure.create({ type: INVALID_TRANSITION, message: 'another change to this order is in progress', details: [state.status] });
    }
  };

  setHandler(orderStateQuery, () => ({ ...state }));
  setHandler(fulfillOrderUpdate, async (args) => {
    state.busy = true;
    try {
      const result = await acts.fulfillOrder({ ...ref, ...args });
      Object.assign(state, { status: result.status, fulfillment: result.fulfillment });
      return { ...state };
    } finally {
      state.busy = false;
    }
  }, { validator: (_args) => mustBeOpen() });
  setHandler(cancelOrderUpdate, async (args) => {
    state.busy = true;
    try {
      const result = await acts.cancelOrder({ ...ref, ...args });
      Object.assign(state, { status: result.status, fulfillment: result.fulfillment });
      return { ...state };
    } finally {
      state.busy = false;
    }
  }, { validator: (_args) => mustBeOpen() });

  // The row is the source of truth: a workflow started late (by the outbox) for an order that
  // was already settled just finishes.
  // An update may have run while this activity did: only move the state forward, never back.
  const current = await acts.confirmOrderWorkflow(ref);
  if (state.status === 'processing') {
    if (current.status !== 'processing') Object.assign(state, { status: current.status, fulfillment: current.fulfillment });
    else if (state.fulfillment === 'pending') state.fulfillment = current.fulfillment;
  }

  if (state.status === 'processing' && state.fulfillment !== 'delayed') {
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
