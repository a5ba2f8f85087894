import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import type { ActivityDeps } from '../../platform/area.ts';

import { scopedEm, type Scope } from '../../domain/scope.ts';
import { CarrierError, type Label, type TrackResult } from '../../domain/shipping/carriers/types.ts';
import {
  getShipment, orderShipmentStatuses, recordAdminAction, recordCancel, recordProgress, recordShipment, type ProgressInput,
} from '../../domain/shipping/service.ts';
import { carrierProblem } from '../../domain/shipping/problems.ts';
import { withOrderWorkflow } from '../../domain/commerce/public.ts';
import { fulfillOrderUpdate, recordOrderShipmentUpdate } from '../../workflows/commerce/shared.ts';
import {
  shipmentWorkflowId, type ShipmentRef, type ShipmentView, type ShipmentWorkflowInput,
} from '../../workflows/shipping/shared.ts';
import type { JourneyContext } from '../../domain/shipping/carriers/types.ts';

export type ShippingActivityDeps = Pick<ActivityDeps, 'orm' | 'carriers' | 'temporal' | 'taskQueue' | 'logger'>;

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/** Keeps heartbeating while a carrier call is in flight (a worker that dies mid-call is noticed). */
async function withHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 1000);
  try {
    ctx.heartbeat();
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** A carrier's refusal is a 4xx problem (non-retryable refusal); its outages are retried. */
function rethrow(err: unknown): never {
  if (err instanceof CarrierError && !err.retryable) throw carrierProblem(err);
  throw err;
}

/** How long one attempt waits for the order workflow to take the update (then the step is retried). */
const ORDER_UPDATE_DEADLINE_MS = 15_000;

/**
 * Tolerates an order workflow that finished or refuses (the order was fulfilled or canceled
 * meanwhile). Each attempt has a deadline and ends when the activity is cancelled (a worker shutting
 * down), so an order workflow that no worker runs just now never holds this step forever.
 */
async function tellOrder(
  deps: ShippingActivityDeps, scope: Scope, orderId: string, send: Parameters<typeof withOrderWorkflow>[3],
): Promise<void> {
  const { temporal } = deps;
  try {
    await temporal.withAbortSignal(Context.current().cancellationSignal, () => temporal.withDeadline(Date.now() + ORDER_UPDATE_DEADLINE_MS,
      () => withOrderWorkflow({ client: temporal, taskQueue: deps.taskQueue }, scopedEm(deps.orm, scope), orderId, send)));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || err instanceof WorkflowUpdateFailedError) {
      deps.logger.info('order workflow did not take the shipment update', { order_id: orderId, error: String(err) });
      return;
    }
    throw err;
  }
}

export function createShippingActivities(deps: ShippingActivityDeps) {
  const { orm, carriers } = deps;
  return {
    /** Buys the label at the carrier (idempotent by shipment id). */
    async buyLabel(input: ShipmentWorkflowInput): Promise<Label> {
      return withHeartbeat(() => carriers.get(input.carrier).buyLabel({
        shipmentId: input.shipmentId, origin: input.origin, destination: input.destination, packages: input.packages,
        serviceLevel: input.serviceLevel, at: new Date(input.labelAt), scenario: input.scenario,
      })).catch(rethrow);
    },

    async recordShipment({ input, label }: { input: ShipmentWorkflowInput; label: Label }): Promise<ShipmentView> {
      return recordShipment(scopedEm(orm, scopeOf(input)), input, {
        trackingNumber: label.trackingNumber, carrierReference: label.carrierReference, labelUrl: label.labelUrl,
        estimatedDelivery: label.rate.estimated_delivery,
      }, label.rate, shipmentWorkflowId(input.shipmentId));
    },

    async getShipment(ref: ShipmentRef): Promise<ShipmentView> {
      return getShipment(scopedEm(orm, scopeOf(ref)), ref.shipmentId);
    },

    async trackShipment(input: ShipmentRef & { carrier: string; trackingNumber: string; carrierReference: string; at: string; journey: JourneyContext }): Promise<TrackResult> {
      return withHeartbeat(() => carriers.get(input.carrier).track({
        trackingNumber: input.trackingNumber, carrierReference: input.carrierReference, at: new Date(input.at), journey: input.journey,
      })).catch(rethrow);
    },

    async recordProgress(input: ShipmentRef & ProgressInput): Promise<ShipmentView> {
      return recordProgress(scopedEm(orm, scopeOf(input)), scopeOf(input), input);
    },

    /** The order shows the shipment's tracking number (through the order workflow). */
    async notifyOrder(input: ShipmentRef & { orderId: string; trackingNumber: string; carrier: string }): Promise<void> {
      await tellOrder(deps, scopeOf(input), input.orderId, (order) => order.executeUpdate(recordOrderShipmentUpdate, {
        args: [{ shipmentId: input.shipmentId, trackingNumber: input.trackingNumber, carrier: input.carrier, requestId: null }],
      }));
    },

    /** When every (not cancelled) shipment of the order is delivered, the order is fulfilled through its workflow. */
    async settleOrder(input: ShipmentRef & { orderId: string }): Promise<boolean> {
      const em = scopedEm(orm, scopeOf(input));
      const statuses = (await orderShipmentStatuses(em, input.orderId)).filter((s) => s !== 'cancelled');
      if (!statuses.length || statuses.some((s) => s !== 'delivered')) return false;
      const shipment = await getShipment(em, input.shipmentId);
      await tellOrder(deps, scopeOf(input), input.orderId, (order) => order.executeUpdate(fulfillOrderUpdate, {
        // One key for the order: the deliveries of two last shipments at once fulfil it once.
        args: [{ trackingNumber: shipment.tracking_number, carrier: shipment.carrier, requestId: null, idempotencyKey: `shipping-fulfil-${input.orderId}` }],
      }));
      return true;
    },

    async voidLabel(input: ShipmentRef & { carrier: string; trackingNumber: string; carrierReference: string }): Promise<void> {
      await withHeartbeat(() => carriers.get(input.carrier).voidLabel({ trackingNumber: input.trackingNumber, carrierReference: input.carrierReference })).catch(rethrow);
    },

    async cancelShipment(input: ShipmentRef & { requestId: string | null }): Promise<ShipmentView> {
      return recordCancel(scopedEm(orm, scopeOf(input)), scopeOf(input), input.shipmentId, input.requestId);
    },

    async recordAdminAction(input: ShipmentRef & { action: string; operator: string; reason: string }): Promise<void> {
      await recordAdminAction(scopedEm(orm, scopeOf(input)), scopeOf(input), input);
    },
  };
}

export type ShippingActivities = ReturnType<typeof createShippingActivities>;
