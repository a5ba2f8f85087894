/**
 * What crosses the layers for the commerce area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

export const COMMERCE_AREA = 'commerce' as const;

const ORDER_WORKFLOW_PREFIX = 'order-';

/** `order-ord_…`: readable and deterministic, so a retried start never runs a second workflow. */
export function orderWorkflowId(orderId: string): string {
  return `${ORDER_WORKFLOW_PREFIX}${orderId}`;
}

export function orderIdFromWorkflowId(workflowId: string): string | null {
  return workflowId.startsWith(ORDER_WORKFLOW_PREFIX) ? workflowId.slice(ORDER_WORKFLOW_PREFIX.length) : null;
}

export interface OrderRef {
  orderId: string;
  accountId: string;
  livemode: boolean;
}

export interface OrderWorkflowInput extends OrderRef {
  customerId: string;
  /** ISO timestamp: when fulfilment counts as delayed (`order.fulfillment.delayed`). */
  fulfillmentDeadline: string;
}

export type OrderWorkflowStatus = 'processing' | 'fulfilled' | 'canceled';

export interface OrderWorkflowState {
  status: OrderWorkflowStatus;
  fulfillment: 'pending' | 'delayed' | 'fulfilled' | 'canceled';
  /** True while an update's activity is running (a second transition waits for it). */
  busy: boolean;
}

export interface FulfillOrderInput {
  trackingNumber: string | null;
  carrier: string | null;
  requestId: string | null;
}

export interface CancelOrderInput {
  reason: string | null;
  requestId: string | null;
}

/** Failure type (ApplicationFailure.type) for a transition the order's state does not allow. */
export const INVALID_TRANSITION = 'invalid_state_transition';

export const fulfillOrderUpdate = defineUpdate<OrderWorkflowState, [FulfillOrderInput]>('fulfillOrder');
export const cancelOrderUpdate = defineUpdate<OrderWorkflowState, [CancelOrderInput]>('cancelOrder');
export const orderStateQuery = defineQuery<OrderWorkflowState>('orderState');
