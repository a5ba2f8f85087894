/**
 * What crosses the layers for the shipping area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import { defineQuery, defineSignal, defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type {
  CarrierScan, Parcel, ServiceLevel, ShipmentStatus, ShippingAddress,
} from '../../domain/shipping/carriers/types.ts';
import type { ShipmentView } from '../../domain/shipping/schemas.ts';
import { workflowIds } from '../kit/ids.ts';

export type { ShipmentView };

/** `shipment-shp_…`. */
export const shipmentWorkflowIds = workflowIds('shipment');
export const shipmentWorkflowId = shipmentWorkflowIds.id;

export interface ShipmentRef {
  shipmentId: string;
  accountId: string;
  livemode: boolean;
}

/**
 * Where a shipment's "carrier time" comes from:
 * - `test_clock`: the clock's frozen time; the journey moves only when the clock is advanced;
 * - `compressed` (sandbox without a clock): carrier time runs `factor` times faster than the
 *   workflow's time from the label on (the label-to-ETA span over `journeyMs`), so a journey of days takes seconds;
 * - `real`: the workflow's own time (real carriers).
 */
export type JourneyClock =
  | { kind: 'test_clock'; clockId: string }
  | { kind: 'compressed'; pollMs: number }
  | { kind: 'real'; pollMs: number };

export interface ShipmentWorkflowInput extends ShipmentRef {
  orderId: string;
  customerId: string | null;
  carrier: string;
  serviceLevel: ServiceLevel;
  origin: ShippingAddress;
  destination: ShippingAddress;
  packages: Parcel[];
  scenario: string;
  testClockId: string | null;
  clock: JourneyClock;
  /** Carrier time at creation (the test clock's time, or now). */
  labelAt: string;
  /** Compressed clocks: how long (real ms) the journey from the label to the ETA takes. */
  journeyMs: number;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
  /** Set when the workflow continued as new: the state it carries over. */
  resume?: ShipmentWorkflowState;
}

export interface ShipmentLabelInfo {
  trackingNumber: string;
  carrierReference: string;
  labelUrl: string;
  estimatedDelivery: string;
}

export interface ShipmentWorkflowState {
  status: ShipmentStatus;
  /** Carrier time of the scan that set `status`. */
  statusAt: string;
  /** Rank of the furthest main status reached (label_created = 1 … delivered = 5). */
  rank: number;
  label: ShipmentLabelInfo | null;
  estimatedDelivery: string | null;
  /** Carrier event ids already taken in (a repeat changes nothing). */
  seen: string[];
  /** Carrier time the shipment has been brought up to. */
  carrierNow: string;
  /** Workflow time at which the compressed journey started (compressed clocks only). */
  journeyStartedAt: number;
  /** Compressed clocks: carrier ms per workflow ms. */
  factor: number;
  pickupId: string | null;
  adminActions: number;
  /** Progress steps applied to the row (each step is applied once, by number). */
  progressSeq: number;
}

/** A manual action on a shipment (admin), recorded with who did it and why. */
export interface SteerShipmentInput {
  action: 'repoll' | 'mark_delivered' | 'mark_exception';
  operator: string;
  reason: string;
}

export interface CarrierScansInput {
  scans: CarrierScan[];
  estimatedDelivery: string | null;
}

/** Sent with the workflow's start (update-with-start): answers with the shipment once its label is bought and its row written. */
export const shipmentCreatedUpdate = defineUpdate<ShipmentView, []>('shipmentCreated');
export const cancelShipmentUpdate = defineUpdate<ShipmentView, [{ requestId: string | null }]>('cancelShipment');
/** A test clock moved: the shipment catches up to `now` (carrier time) and answers once it has. */
export const advanceShipmentClockUpdate = defineUpdate<{ caughtUpTo: string }, [{ now: string }]>('advanceShipmentClock');
export const steerShipmentUpdate = defineUpdate<ShipmentWorkflowState, [SteerShipmentInput]>('steerShipment');
/** Scans the carrier pushed (verified and deduplicated by the API). */
export const carrierScansSignal = defineSignal<[CarrierScansInput]>('carrierScans');
export const pickupChangedSignal = defineSignal<[{ pickupId: string | null }]>('pickupChanged');
export const shipmentStateQuery = defineQuery<ShipmentWorkflowState>('shipmentState');

/** Database steps: short, retried on outages (a refusal, a 4xx ApiError, is not: worker/activity-refusals.ts). */
export const DB_STEPS = {
  // Short: the writes take milliseconds, and a worker that dies mid-step is noticed this soon.
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 50 },
} satisfies ActivityOptions;

/** Buying the label: a few quick tries, so the API can answer (503) while the caller still waits. */
export const LABEL_STEP = {
  startToCloseTimeout: '15 seconds',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '2 seconds', maximumAttempts: 3 },
} satisfies ActivityOptions;

/** Carrier calls during the journey (tracking, voids): retried for up to an hour, then the step gives up. */
export const CARRIER_STEPS = {
  startToCloseTimeout: '20 seconds',
  heartbeatTimeout: '5 seconds',
  scheduleToCloseTimeout: '1 hour',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '2 minutes' },
} satisfies ActivityOptions;
