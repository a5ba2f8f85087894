/**
 * The carrier adapter interface: what the shipping area asks of a carrier (sandbox or real).
 * Pure types and errors: workflows import the types (with `import type`).
 */

export const SERVICE_LEVELS = ['ground', 'express', 'overnight'] as const;
export type ServiceLevel = (typeof SERVICE_LEVELS)[number];

/** Main statuses in the order a shipment goes through them; a status never moves backwards. */
export const MAIN_STATUSES = ['pending', 'label_created', 'picked_up', 'in_transit', 'out_for_delivery', 'delivered'] as const;
/** Side states: a problem, the parcel going back, or a label voided before pickup. */
export const SIDE_STATUSES = ['exception', 'returned_to_sender', 'cancelled'] as const;
export const SHIPMENT_STATUSES = [...MAIN_STATUSES, ...SIDE_STATUSES] as const;
export type ShipmentStatus = (typeof SHIPMENT_STATUSES)[number];
/** A shipment in one of these has finished its journey. */
export const TERMINAL_STATUSES: readonly ShipmentStatus[] = ['delivered', 'returned_to_sender', 'cancelled'];

export interface PostalPoint {
  country: string;
  postal_code: string;
}

export interface ShippingAddress extends PostalPoint {
  address: string;
  city: string;
}

export interface Dimensions {
  length: number;
  width: number;
  height: number;
}

/** A package: weight in kg, dimensions in cm, declared value in minor units. */
export interface Parcel {
  weight: number;
  dimensions?: Dimensions | undefined;
  value?: number | undefined;
}

export interface RateQuote {
  carrier: string;
  service_level: ServiceLevel;
  /** Minor units. */
  amount: number;
  currency: string;
  /** Business days in transit. */
  estimated_days: number;
  estimated_delivery: string;
}

export interface RateRequest {
  origin: PostalPoint;
  destination: PostalPoint;
  packages: Parcel[];
  serviceLevels?: readonly ServiceLevel[] | undefined;
  /** The carrier's "now" (a test clock's time in the sandbox). */
  at: Date;
  signal?: AbortSignal | undefined;
}

export interface LabelRequest {
  shipmentId: string;
  origin: ShippingAddress;
  destination: ShippingAddress;
  packages: Parcel[];
  serviceLevel: ServiceLevel;
  at: Date;
  /** Sandbox only: the documented test scenario (`metadata.sandbox_scenario`). */
  scenario: string | null;
}

export interface Label {
  trackingNumber: string;
  labelUrl: string;
  /** The carrier's own id of the shipment (EasyPost `shp_…`), used to track, void and pick up. */
  carrierReference: string;
  rate: RateQuote;
}

/** One scan as the carrier reports it; `id` is the carrier's own, so repeats are recognised. */
export interface CarrierScan {
  id: string;
  status: ShipmentStatus;
  timestamp: string;
  location: string;
  description: string;
  /** A new estimated delivery the carrier announced with this scan. */
  estimated_delivery?: string | null;
}

/** What a sandbox journey needs to know about the shipment (real carriers ignore it). */
export interface JourneyContext {
  labelAt: string;
  estimatedDelivery: string;
  scenario: string;
  originCity: string;
  destinationCity: string;
}

export interface TrackRequest {
  trackingNumber: string;
  carrierReference: string;
  at: Date;
  journey: JourneyContext;
}

export interface TrackResult {
  scans: CarrierScan[];
  estimatedDelivery: string | null;
}

export interface PickupRequest {
  pickupId: string;
  carrierReferences: string[];
  trackingNumbers: string[];
  address: ShippingAddress;
  date: string;
  windowStart: string;
  windowEnd: string;
  instructions: string | null;
  contact: { name: string; phone: string };
}

/** A push from the carrier, verified: its delivery id (for deduplication) and the scans by tracking number. */
export interface CarrierPush {
  eventId: string;
  trackingNumber: string;
  scans: CarrierScan[];
  estimatedDelivery: string | null;
}

export interface CarrierLimits {
  maxWeightKg: number;
  /** Longest side, cm. */
  maxSideCm: number;
  maxPackages: number;
}

export interface CarrierAdapter {
  readonly name: string;
  readonly kind: 'sandbox' | 'easypost';
  readonly serviceLevels: readonly ServiceLevel[];
  readonly limits: CarrierLimits;
  /** Pickup hours (UTC, HH:MM), business days only. */
  readonly pickupHours: { open: string; close: string };
  rates(req: RateRequest): Promise<RateQuote[]>;
  /** Buys the label; idempotent by `shipmentId` (a retry returns the label already bought). */
  buyLabel(req: LabelRequest): Promise<Label>;
  voidLabel(req: { trackingNumber: string; carrierReference: string }): Promise<void>;
  schedulePickup(req: PickupRequest): Promise<{ confirmationNumber: string; carrierReference: string }>;
  cancelPickup(req: { carrierReference: string }): Promise<void>;
  track(req: TrackRequest): Promise<TrackResult>;
  /** Verifies a push's signature and reads it; throws PushRejectedError when it does not verify. */
  readPush(body: unknown, headers: Record<string, string | undefined>, now: Date): CarrierPush;
}

export type CarrierErrorCode =
  | 'address_rejected' | 'carrier_unavailable' | 'carrier_timeout' | 'service_not_offered' | 'package_exceeds_limits' | 'carrier_error';

/** The carrier refused or failed a call. `retryable` outages are retried; the others are answers. */
export class CarrierError extends Error {
  readonly code: CarrierErrorCode;
  readonly carrier: string;
  readonly field: string | null;
  readonly retryable: boolean;
  constructor(carrier: string, code: CarrierErrorCode, message: string, opts: { field?: string; retryable?: boolean } = {}) {
    super(message);
    this.name = 'CarrierError';
    this.carrier = carrier;
    this.code = code;
    this.field = opts.field ?? null;
    this.retryable = opts.retryable ?? (code === 'carrier_unavailable' || code === 'carrier_timeout');
  }
}

export class PushRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PushRejectedError';
  }
}
