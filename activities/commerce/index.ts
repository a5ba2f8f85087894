import type { MikroORM } from '@mikro-orm/postgresql';
import {
  cancelOrder, fulfillOrder, markFulfillmentDelayed, recordOrderShipment, writeOrder, type OrderView, type TransitionResult,
} from '../../domain/commerce/orders.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import type { CancelOrderInput, FulfillOrderInput, OrderDraft, OrderRef, OrderShipmentInput } from '../../workflows/commerce/shared.ts';

export interface CommerceActivityDeps {
  orm: MikroORM;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/**
 * Activities of the commerce area: each takes ids, changes rows in one transaction, returns plain data.
 * Business refusals (a 4xx ApiError: wrong state, unknown order, not enough stock) are made
 * non-retryable by the workers' activity interceptor (worker/activity-refusals.ts); outages are retried.
 */
export function createCommerceActivities({ orm }: CommerceActivityDeps) {
  return {
    /** The order workflow's first step: finds the row the API wrote and stamps `workflow_confirmed_at` (writeOrder). */
    async createOrder(draft: OrderDraft): Promise<OrderView> {
      return writeOrder(scopedEm(orm, scopeOf(draft)), scopeOf(draft), draft, { confirm: true });
    },
    async fulfillOrder(input: OrderRef & FulfillOrderInput): Promise<TransitionResult> {
      return fulfillOrder(scopedEm(orm, scopeOf(input)), scopeOf(input), input.orderId, input);
    },
    async cancelOrder(input: OrderRef & CancelOrderInput): Promise<TransitionResult> {
      return cancelOrder(scopedEm(orm, scopeOf(input)), scopeOf(input), input.orderId, input);
    },
    async recordOrderShipment(input: OrderRef & OrderShipmentInput): Promise<TransitionResult> {
      return recordOrderShipment(scopedEm(orm, scopeOf(input)), scopeOf(input), input.orderId, input);
    },
    async markFulfillmentDelayed(ref: OrderRef): Promise<TransitionResult> {
      return markFulfillmentDelayed(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref.orderId);
    },
  };
}

export type CommerceActivities = ReturnType<typeof createCommerceActivities>;
