import { ApplicationFailure } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  cancelOrder, confirmOrderWorkflow, fulfillOrder, markFulfillmentDelayed, type TransitionResult,
} from '../domain/commerce/orders.ts';
import { scopedEm, type Scope } from '../domain/scope.ts';
import { ApiError } from '../platform/errors.ts';
import type { CancelOrderInput, FulfillOrderInput, OrderRef } from '../workflows/commerce/shared.ts';

export interface CommerceActivityDeps {
  orm: MikroORM;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/** Business refusals (a 4xx ApiError: wrong state, unknown order) are not retried; outages are. */
async function businessFailuresFinal<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) {
      throw ApplicationFailure.nonRetryable(err.detail, err.code, { status: err.status, ...err.extensions });
    }
    throw err;
  }
}

/** Activities of the commerce area: each takes ids, changes rows in one transaction, returns plain data. */
export function createCommerceActivities({ orm }: CommerceActivityDeps) {
  return {
    async confirmOrderWorkflow(ref: OrderRef): Promise<TransitionResult> {
      return businessFailuresFinal(() => confirmOrderWorkflow(scopedEm(orm, scopeOf(ref)), ref.orderId));
    },
    async fulfillOrder(input: OrderRef & FulfillOrderInput): Promise<TransitionResult> {
      return businessFailuresFinal(() => fulfillOrder(scopedEm(orm, scopeOf(input)), scopeOf(input), input.orderId, input));
    },
    async cancelOrder(input: OrderRef & CancelOrderInput): Promise<TransitionResult> {
      return businessFailuresFinal(() => cancelOrder(scopedEm(orm, scopeOf(input)), scopeOf(input), input.orderId, input));
    },
    async markFulfillmentDelayed(ref: OrderRef): Promise<TransitionResult> {
      return businessFailuresFinal(() => markFulfillmentDelayed(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref.orderId));
    },
  };
}

export type CommerceActivities = ReturnType<typeof createCommerceActivities>;
