import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { shipmentSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Shipment = z.input<typeof shipmentSchema>;

const shipmentExample = (status: Shipment['status']): Shipment => ({
  id: 'shp_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'shipment', livemode: false, order_id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f',
  customer_id: 'cus_01jpa7t2d4f6hk8m0p2r4t6v8x', status, carrier: 'parcelpoint', service_level: 'express',
  tracking_number: 'PP4821097735120846', label_url: 'https://labels.sandbox.business-platform.dev/parcelpoint/PP4821097735120846.pdf',
  rate: { amount: 2214, currency: 'USD', estimated_days: 2 }, estimated_delivery: '2025-03-18T20:00:00.000Z',
  original_estimated_delivery: '2025-03-18T20:00:00.000Z',
  origin: { address: '1 Dock Rd', city: 'Newark', country: 'US', postal_code: '07102' },
  destination: { address: '12 Elm St', city: 'Springfield', country: 'US', postal_code: '62701' },
  packages: [{ weight: 2.5, dimensions: { length: 30, width: 20, height: 15 }, value: 12900 }],
  pickup_id: null, test_clock: null, workflow_id: 'shipment-shp_01jpa7v0f4j6kn8r1w3y5a7c9e', metadata: {},
  created_at: ts, updated_at: ts, delivered_at: status === 'delivered' ? '2025-03-18T15:12:00.000Z' : null, cancelled_at: status === 'cancelled' ? ts : null,
});

const kind = <T extends string>(type: T, status: Shipment['status'], description: string) =>
  eventKind({ type, aboutCustomer: true, schema: shipmentSchema, description, example: shipmentExample(status) });

/** Events the shipping area records (it also records commerce's `order.fulfillment.delayed` on an ETA slip). */
export const shippingEvents = [
  kind('shipment.created', 'label_created', 'A shipment was created: the carrier sold its label (`tracking_number`, `label_url`, `rate`).'),
  kind('shipment.picked_up', 'picked_up', 'The carrier picked the shipment up.'),
  kind('shipment.in_transit', 'in_transit', 'The shipment is moving through the carrier\'s network.'),
  kind('shipment.out_for_delivery', 'out_for_delivery', 'The shipment is out for delivery.'),
  kind('shipment.delivered', 'delivered', 'The shipment was delivered.'),
  kind('shipment.exception', 'exception', 'The carrier reported a problem with the shipment (address problem, damage, loss).'),
  kind('shipment.returned_to_sender', 'returned_to_sender', 'The shipment is going back to its origin.'),
  kind('shipment.cancelled', 'cancelled', 'The shipment was cancelled before pickup; its label was voided.'),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof shippingEvents)[number]['type'], true> {}
}
