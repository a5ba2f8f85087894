import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerExample } from '../customers/public.ts';
import { inventoryLevelSchema, orderSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Order = z.input<typeof orderSchema>;

const orderExample = (
  status: Order['status'],
  fulfillment: Order['fulfillment']['status'] = status === 'fulfilled' ? 'fulfilled' : status === 'canceled' ? 'canceled' : 'pending',
): Order => ({
  id: 'ord_01jpa7x6h8m0pr2t4w6y8b0d2f', object: 'order', livemode: false, store_id: 'store_01jpa7z1k3n5qs7u9x1a3c5e7g',
  customer_id: customerExample.id, status, payment_status: 'paid', total_amount: 12900, currency: 'USD',
  line_items: [{
    product_id: 'prod_01jpa7y3k5n7qs9u1w3y5a7c9e', sku: 'MUG-BLUE', name: 'Blue mug', variant: null, quantity: 2, unit_price: 6450, amount: 12900,
    allocations: [{ warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', quantity: 2 }], short_quantity: 0,
  }],
  shipping_address: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postal_code: 'SW1Y 4JH', country: 'GB' },
  fulfillment: {
    status: fulfillment, tracking_number: status === 'fulfilled' ? '1Z999AA10123456784' : null, carrier: status === 'fulfilled' ? 'ups' : null,
    deadline: '2025-03-16T09:30:00.000Z', fulfilled_at: status === 'fulfilled' ? '2025-03-15T10:00:00.000Z' : null,
  },
  workflow_id: 'order-ord_01jpa7x6h8m0pr2t4w6y8b0d2f', canceled_at: null, cancellation_reason: null,
  paid_at: ts, payment_id: null, metadata: {}, created_at: ts, updated_at: ts,
});

/** Events the commerce area records. */
export const commerceEvents = [
  eventKind({
    type: 'order.created', aboutCustomer: true, schema: orderSchema,
    description: 'An order was placed.',
    example: orderExample('processing'),
  }),
  eventKind({
    type: 'order.fulfilled', aboutCustomer: true, schema: orderSchema,
    description: 'Every item of an order was fulfilled.',
    example: orderExample('fulfilled'),
  }),
  eventKind({
    type: 'order.fulfillment.delayed', aboutCustomer: true, schema: orderSchema,
    description: 'Fulfilment of an order is late against its deadline (logistics tracking).',
    example: orderExample('processing', 'delayed'),
  }),
  eventKind({
    type: 'order.canceled', aboutCustomer: true, schema: orderSchema,
    description: 'An order was canceled before fulfilment; its reserved stock was released.',
    example: { ...orderExample('canceled'), canceled_at: ts, cancellation_reason: 'customer request' },
  }),
  eventKind({
    type: 'order.updated', aboutCustomer: true, schema: orderSchema,
    description: 'An order changed (metadata, shipping address, payment status); `data.previous_attributes` holds the previous values of what changed.',
    example: orderExample('processing'),
  }),
  eventKind({
    type: 'order.short_picked', aboutCustomer: true, schema: orderSchema,
    description: 'A pick list found fewer units than were reserved for the order: the short lines show `short_quantity`, their reservation was released; `data.previous_attributes.line_items` holds the lines before.',
    example: (() => {
      const o = orderExample('processing');
      return { ...o, line_items: o.line_items.map((l) => ({ ...l, allocations: [{ warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', quantity: 1 }], short_quantity: 1 })) };
    })(),
  }),
  eventKind({
    type: 'inventory.low_stock', aboutCustomer: false, schema: inventoryLevelSchema,
    description: 'Available stock of a SKU in a warehouse fell to or below its reorder point.',
    example: {
      object: 'inventory_level', livemode: false, warehouse_id: 'wh_01jpa81m5p7r9t1v3x5z7b9d1f', sku: 'MUG-BLUE',
      quantity: 4, reserved: 1, available: 3, reorder_point: 5, safety_stock: 2, location: 'A-03-2', last_updated: ts,
    },
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof commerceEvents)[number]['type'], true> {}
}
