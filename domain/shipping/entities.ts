import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import { SERVICE_LEVELS, SHIPMENT_STATUSES, type Parcel, type ShippingAddress } from './carriers/types.ts';

/**
 * A shipment: written by its workflow's activities only (so the row and the workflow always agree),
 * read by the API. Its scans live in `shipping_tracking_events`, its ETA slips in `shipping_delays`
 * (both written with plain SQL, `insert … on conflict do nothing`, so repeats are no-ops).
 */
export const Shipment = defineEntity({
  name: 'Shipment',
  tableName: 'shipping_shipments',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    orderId: p.string(),
    customerId: p.string().nullable(),
    status: p.enum(SHIPMENT_STATUSES),
    carrier: p.string(),
    serviceLevel: p.enum(SERVICE_LEVELS),
    trackingNumber: p.string(),
    carrierReference: p.string(),
    labelUrl: p.string(),
    rateAmount: p.bigint('number'),
    rateCurrency: p.string(),
    rateEstimatedDays: p.integer(),
    estimatedDelivery: p.datetime().nullable(),
    originalEstimatedDelivery: p.datetime(),
    origin: p.json<ShippingAddress>(),
    destination: p.json<ShippingAddress>(),
    packages: p.json<Parcel[]>(),
    scenario: p.string(),
    testClockId: p.string().nullable(),
    pickupId: p.string().nullable(),
    labelCreatedAt: p.datetime(),
    deliveredAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
    workflowId: p.string(),
    /** The workflow's count of applied progress steps: a retried step that already committed changes nothing. */
    progressSeq: p.integer().default(0),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Shipment = InferEntity<typeof Shipment>;

export const ShippingPickup = defineEntity({
  name: 'ShippingPickup',
  tableName: 'shipping_pickups',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    carrier: p.string(),
    status: p.enum(['scheduled', 'cancelled'] as const),
    confirmationNumber: p.string(),
    carrierReference: p.string(),
    pickupDate: p.string().columnType('date'),
    windowStart: p.string(),
    windowEnd: p.string(),
    specialInstructions: p.text().nullable(),
    contact: p.json<{ name: string; phone: string }>(),
    address: p.json<ShippingAddress>(),
    shipmentIds: p.json<string[]>(),
    requestIdempotencyKey: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    cancelledAt: p.datetime().nullable(),
  },
});
export type ShippingPickup = InferEntity<typeof ShippingPickup>;

/** The sandbox's test clocks for shipments: a shipment on one moves only when the clock is advanced. */
export const ShippingTestClock = defineEntity({
  name: 'ShippingTestClock',
  tableName: 'shipping_test_clocks',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string().nullable(),
    frozenTime: p.datetime(),
    status: p.enum(['ready', 'advancing'] as const),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ShippingTestClock = InferEntity<typeof ShippingTestClock>;

/** An account's carrier choice per mode (admin): the default carrier, and which carriers it may use. */
export const ShippingCarrierSetting = defineEntity({
  name: 'ShippingCarrierSetting',
  tableName: 'shipping_carrier_settings',
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    defaultCarrier: p.string().nullable(),
    enabledCarriers: p.json<string[]>().nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ShippingCarrierSetting = InferEntity<typeof ShippingCarrierSetting>;
