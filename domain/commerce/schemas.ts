import { z } from 'zod';

/**
 * The commerce area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only (workflows may import the types, with `import type`).
 */

export const ORDER_STATUSES = ['processing', 'fulfilled', 'canceled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const FULFILLMENT_STATUSES = ['pending', 'delayed', 'fulfilled', 'canceled'] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];
export const PAYMENT_STATUSES = ['unpaid', 'paid', 'refunded'] as const;
export type OrderPaymentStatus = (typeof PAYMENT_STATUSES)[number];

export const address = z.strictObject({
  name: z.string().max(200).optional(),
  line1: z.string().max(200).optional(),
  line2: z.string().max(200).optional(),
  address: z.string().max(400).optional().describe('Single-line form, as the shipping area sends it.'),
  city: z.string().max(100).optional(),
  state: z.string().max(100).optional(),
  postal_code: z.string().max(20).optional(),
  country: z.string().regex(/^[A-Z]{2}$/, 'a two-letter ISO 3166-1 country code such as US').optional(),
  phone: z.string().max(30).optional(),
});

export const lineItemSchema = z.object({
  product_id: z.string(),
  sku: z.string(),
  name: z.string(),
  variant: z.string().nullable(),
  quantity: z.number().int(),
  unit_price: z.number().int().describe('Minor units of the order currency.'),
  amount: z.number().int(),
  allocations: z.array(z.object({ warehouse_id: z.string(), quantity: z.number().int() })).describe('Where the units are reserved.'),
  short_quantity: z.number().int().describe('Units a pick list could not find (short picks): released from the reservation and not shipped. 0 normally.'),
});

export const orderSchema = z
  .object({
    id: z.string(),
    object: z.literal('order'),
    livemode: z.boolean(),
    store_id: z.string(),
    customer_id: z.string(),
    status: z.enum(ORDER_STATUSES),
    payment_status: z.enum(PAYMENT_STATUSES),
    total_amount: z.number().int().describe('Minor units of `currency`.'),
    currency: z.string(),
    line_items: z.array(lineItemSchema),
    shipping_address: address,
    fulfillment: z.object({
      status: z.enum(FULFILLMENT_STATUSES),
      tracking_number: z.string().nullable(),
      carrier: z.string().nullable(),
      deadline: z.iso.datetime(),
      fulfilled_at: z.iso.datetime().nullable(),
    }),
    workflow_id: z.string(),
    canceled_at: z.iso.datetime().nullable(),
    cancellation_reason: z.string().nullable(),
    paid_at: z.iso.datetime().nullable(),
    payment_id: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Order' });

export const productSchema = z
  .object({
    id: z.string(),
    object: z.literal('product'),
    livemode: z.boolean(),
    store_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    sku: z.string(),
    price: z.number().int(),
    currency: z.string(),
    prices: z.record(z.string(), z.number().int()),
    categories: z.array(z.string()),
    variants: z.array(z.object({ name: z.string(), price: z.number().int(), features: z.array(z.string()) })),
    inventory: z.object({ track_quantity: z.boolean(), unlimited: z.boolean(), reorder_point: z.number().int(), safety_stock: z.number().int() }),
    active: z.boolean(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Product' });

export const inventoryLevelSchema = z
  .object({
    object: z.literal('inventory_level'),
    sku: z.string(),
    warehouse_id: z.string(),
    quantity: z.number().int(),
    reserved: z.number().int(),
    available: z.number().int(),
    safety_stock: z.number().int(),
    reorder_point: z.number().int(),
    location: z.string().nullable(),
    last_updated: z.iso.datetime(),
  })
  .meta({ id: 'InventoryLevel' });

/** The Product resource. */
export type ProductView = z.output<typeof productSchema>;
/** The Order resource. */
export type OrderView = z.output<typeof orderSchema>;
/** The InventoryLevel resource (stock of one SKU in one warehouse). */
export type InventoryLevelView = z.output<typeof inventoryLevelSchema>;
