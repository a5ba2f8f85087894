import { z } from 'zod';
import { SERVICE_LEVELS, SHIPMENT_STATUSES } from './carriers/types.ts';

/**
 * The shipping area's resources, declared once (routes, OpenAPI, event catalog). Pure: zod only.
 */
const ts = z.iso.datetime();

export const shippingAddressSchema = z.object({
  address: z.string(), city: z.string(), country: z.string().describe('ISO 3166-1 alpha-2.'), postal_code: z.string(),
}).meta({ id: 'ShippingAddress' });

export const shipmentPackageSchema = z.object({
  weight: z.number().describe('Kilograms.'),
  dimensions: z.object({ length: z.number(), width: z.number(), height: z.number() }).nullable().describe('Centimetres.'),
  value: z.number().int().nullable().describe('Declared value, minor units.'),
}).meta({ id: 'ShipmentPackage' });

export const shipmentSchema = z.object({
  id: z.string(),
  object: z.literal('shipment'),
  livemode: z.boolean(),
  order_id: z.string(),
  customer_id: z.string().nullable(),
  status: z.enum(SHIPMENT_STATUSES),
  carrier: z.string(),
  service_level: z.enum(SERVICE_LEVELS),
  tracking_number: z.string(),
  label_url: z.string(),
  rate: z.object({ amount: z.number().int().describe('Minor units.'), currency: z.string(), estimated_days: z.number().int() }),
  estimated_delivery: ts.nullable().describe('Null once the estimate passed without delivery and the carrier gave no new one.'),
  original_estimated_delivery: ts,
  origin: shippingAddressSchema,
  destination: shippingAddressSchema,
  packages: z.array(shipmentPackageSchema),
  pickup_id: z.string().nullable(),
  test_clock: z.string().nullable(),
  workflow_id: z.string(),
  metadata: z.record(z.string(), z.string()),
  created_at: ts,
  updated_at: ts,
  delivered_at: ts.nullable(),
  cancelled_at: ts.nullable(),
}).meta({ id: 'Shipment' });

export const trackingEventSchema = z.object({
  timestamp: ts,
  status: z.enum(SHIPMENT_STATUSES),
  location: z.string(),
  description: z.string(),
}).meta({ id: 'ShipmentTrackingEvent' });

/** The spec's Shipment tracking resource. */
export const shipmentTrackingSchema = z.object({
  object: z.literal('shipment_tracking'),
  shipment_id: z.string(),
  tracking_number: z.string(),
  status: z.enum(SHIPMENT_STATUSES),
  carrier: z.string(),
  estimated_delivery: ts.nullable(),
  tracking_events: z.array(trackingEventSchema).describe('Sorted by timestamp, oldest first.'),
}).meta({ id: 'ShipmentTracking' });

export const rateSchema = z.object({
  carrier: z.string(),
  service_level: z.enum(SERVICE_LEVELS),
  amount: z.number().int().describe('Minor units.'),
  currency: z.string(),
  estimated_days: z.number().int().describe('Business days in transit.'),
  estimated_delivery: ts,
}).meta({ id: 'ShippingRate' });

export const carrierErrorSchema = z.object({ carrier: z.string(), code: z.string(), message: z.string() }).meta({ id: 'CarrierRateError' });

export const ratesSchema = z.object({
  object: z.literal('shipping_rates'),
  rates: z.array(rateSchema).describe('Sorted by amount, cheapest first.'),
  errors: z.array(carrierErrorSchema).describe('Carriers that did not answer or refused.'),
}).meta({ id: 'ShippingRates' });

export const rateComparisonSchema = z.object({
  object: z.literal('rate_comparison'),
  rates: z.array(rateSchema.extend({ cheapest: z.boolean(), fastest: z.boolean() })).describe('Sorted by amount, cheapest first.'),
  errors: z.array(carrierErrorSchema).describe('Carriers that did not answer or refused; the others still count.'),
}).meta({ id: 'RateComparison' });

export const pickupSchema = z.object({
  id: z.string(),
  object: z.literal('pickup'),
  livemode: z.boolean(),
  status: z.enum(['scheduled', 'cancelled']),
  carrier: z.string(),
  confirmation_number: z.string(),
  pickup_date: z.string(),
  time_window: z.object({ start: z.string(), end: z.string() }),
  special_instructions: z.string().nullable(),
  contact: z.object({ name: z.string(), phone: z.string() }),
  address: shippingAddressSchema,
  shipment_ids: z.array(z.string()),
  created_at: ts,
  cancelled_at: ts.nullable(),
}).meta({ id: 'Pickup' });

export const shippingTestClockSchema = z.object({
  id: z.string(),
  object: z.literal('shipping_test_clock'),
  livemode: z.literal(false),
  name: z.string().nullable(),
  frozen_time: ts,
  status: z.enum(['ready', 'advancing']),
  created_at: ts,
}).meta({ id: 'ShippingTestClock' });

export const pushReceiptSchema = z.object({
  object: z.literal('carrier_push_receipt'),
  carrier: z.string(),
  event_id: z.string(),
  shipment_id: z.string(),
  duplicate: z.boolean().describe('True when this carrier event id was received before (nothing was done again).'),
}).meta({ id: 'CarrierPushReceipt' });

/** The `order.fulfillment.delayed` payload's shipping part (beside `object`, the order). */
export const shipmentDelaySchema = z.object({
  shipment_id: z.string(),
  previous_estimated_delivery: ts,
  new_estimated_delivery: ts.nullable(),
  reason: z.enum(['carrier_updated_eta', 'eta_passed']),
}).meta({ id: 'ShipmentDelay' });

export type ShipmentView = z.output<typeof shipmentSchema>;
export type ShipmentTrackingView = z.output<typeof shipmentTrackingSchema>;
export type RateView = z.output<typeof rateSchema>;
export type RateComparisonView = z.output<typeof rateComparisonSchema>;
export type PickupView = z.output<typeof pickupSchema>;
export type ShippingTestClockView = z.output<typeof shippingTestClockSchema>;
export type ShipmentDelayView = z.output<typeof shipmentDelaySchema>;
