/**
 * What crosses the layers for the commerce area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { Address, OrderLine } from '../../domain/commerce/entities.ts';
import type { OrderView } from '../../domain/commerce/orders.ts';
import { workflowIds } from '../kit/ids.ts';

/** `order-ord_…`: readable and deterministic, so a retried start never runs a second workflow. */
export const orderWorkflowId = workflowIds('order').id;

export interface OrderRef {
  orderId: string;
  accountId: string;
  livemode: boolean;
}

/**
 * An order as the API checked and priced it, before anything is written: the workflow's input.
 * Its first activity reserves the stock and writes the row from it.
 */
export interface OrderDraft extends OrderRef {
  storeId: string;
  customerId: string;
  currency: string;
  /** Priced lines, without allocations (the reservation makes them). */
  lines: Omit<OrderLine, 'allocations'>[];
  /** SKUs whose stock is tracked (reserved); the others are sold without a reservation. */
  trackedSkus: string[];
  total: number;
  shippingAddress: Address;
  paymentStatus: 'unpaid' | 'paid';
  paymentId: string | null;
  metadata: Record<string, string>;
  /** ISO timestamp of the request: the order's `created_at`. */
  placedAt: string;
  /** ISO timestamp: when fulfilment counts as delayed (`order.fulfillment.delayed`). */
  fulfillmentDeadline: string;
  requestId: string | null;
  /** The API wrote the order already (the outbox's start): the first step confirms it and never writes one. */
  written?: boolean;
}

export type OrderWorkflowInput = OrderDraft;

export type OrderWorkflowStatus = 'processing' | 'fulfilled' | 'canceled';

export interface OrderWorkflowState {
  status: OrderWorkflowStatus;
  fulfillment: 'pending' | 'delayed' | 'fulfilled' | 'canceled';
  /** True while an update's activity is running (a second transition waits for it). */
  busy: boolean;
  /** The Idempotency-Key that applied each transition, so a retry of it answers success, not 409. */
  appliedKeys?: Partial<Record<'fulfill' | 'cancel', string>>;
}

export interface FulfillOrderInput {
  trackingNumber: string | null;
  carrier: string | null;
  requestId: string | null;
  idempotencyKey?: string | null;
}

/** A shipment of the order got its label (shipping area): the order shows its tracking number and carrier. */
export interface OrderShipmentInput {
  shipmentId: string;
  trackingNumber: string;
  carrier: string;
  requestId: string | null;
}

export interface CancelOrderInput {
  reason: string | null;
  requestId: string | null;
  idempotencyKey?: string | null;
}

/** Sent with the workflow's start (update-with-start): answers with the order once its row is written, or the refusal. */
export const orderCreatedUpdate = defineUpdate<OrderView, []>('orderCreated');
export const fulfillOrderUpdate = defineUpdate<OrderWorkflowState, [FulfillOrderInput]>('fulfillOrder');
export const cancelOrderUpdate = defineUpdate<OrderWorkflowState, [CancelOrderInput]>('cancelOrder');
/** Sent by the shipping area when a shipment of a processing order gets its label. */
export const recordOrderShipmentUpdate = defineUpdate<OrderWorkflowState, [OrderShipmentInput]>('recordOrderShipment');
export const orderStateQuery = defineQuery<OrderWorkflowState>('orderState');
