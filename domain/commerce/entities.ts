import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import { FULFILLMENT_STATUSES, ORDER_STATUSES, PAYMENT_STATUSES, type OrderStatus } from './schemas.ts';

export interface Variant {
  name: string;
  /** Minor units of the product's currency. */
  price: number;
  features: string[];
}

export interface Address {
  name?: string;
  line1?: string;
  line2?: string;
  address?: string;
  city?: string;
  state?: string;
  postal_code?: string;
  country?: string;
  phone?: string;
}

export const Store = defineEntity({
  name: 'Store',
  tableName: 'stores',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    url: p.text().nullable(),
    defaultCurrency: p.text(),
    fulfillmentDeadlineSeconds: p.integer(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Store = InferEntity<typeof Store>;

export const Product = defineEntity({
  name: 'Product',
  tableName: 'products',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    storeId: p.string(),
    name: p.text(),
    description: p.text().nullable(),
    sku: p.text(),
    price: p.bigint('number'),
    currency: p.text(),
    /** Fixed prices per currency (minor units), which win over conversion. */
    prices: p.json<Record<string, number>>(),
    categories: p.array().$type<string[]>(),
    variants: p.json<Variant[]>(),
    trackQuantity: p.boolean(),
    unlimited: p.boolean(),
    reorderPoint: p.integer(),
    safetyStock: p.integer(),
    active: p.boolean(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Product = InferEntity<typeof Product>;

export const Warehouse = defineEntity({
  name: 'Warehouse',
  tableName: 'warehouses',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.text(),
    code: p.text().nullable(),
    address: p.json<Address>().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Warehouse = InferEntity<typeof Warehouse>;

/**
 * Stock of one SKU in one warehouse. Changed only by the conditional SQL in `inventory.ts`
 * (never read-modify-write); the entity is for reads.
 */
export const InventoryLevel = defineEntity({
  name: 'InventoryLevel',
  tableName: 'inventory_levels',
  filters: scopeFilter,
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    warehouseId: p.string().primary(),
    sku: p.text().primary(),
    quantity: p.integer(),
    reserved: p.integer(),
    safetyStock: p.integer(),
    reorderPoint: p.integer(),
    location: p.text().nullable(),
    updatedAt: p.datetime(),
  },
});
export type InventoryLevel = InferEntity<typeof InventoryLevel>;

export {
  FULFILLMENT_STATUSES, ORDER_STATUSES, PAYMENT_STATUSES, type FulfillmentStatus, type OrderPaymentStatus, type OrderStatus,
} from './schemas.ts';

/** Status groups for `GET /v3/orders?status_group=…`, each a documented set of statuses. */
export const ORDER_STATUS_GROUPS = {
  open: ['processing'],
  fulfilled: ['fulfilled'],
  closed: ['fulfilled', 'canceled'],
} as const satisfies Record<string, readonly OrderStatus[]>;
export type OrderStatusGroup = keyof typeof ORDER_STATUS_GROUPS;

export interface Allocation {
  warehouse_id: string;
  quantity: number;
}

export interface OrderLine {
  product_id: string;
  sku: string;
  name: string;
  variant: string | null;
  quantity: number;
  /** Minor units of the order's currency. */
  unit_price: number;
  amount: number;
  /** Where the units are reserved; empty for products that do not track stock. */
  allocations: Allocation[];
  /** Units a pick list could not find (released from the reservation, not shipped); absent means 0. */
  short_quantity?: number;
}

export const Order = defineEntity({
  name: 'Order',
  tableName: 'orders',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    storeId: p.string(),
    customerId: p.string(),
    status: p.enum(ORDER_STATUSES),
    paymentStatus: p.enum(PAYMENT_STATUSES),
    totalAmount: p.bigint('number'),
    currency: p.text(),
    lineItems: p.json<OrderLine[]>(),
    shippingAddress: p.json<Address>(),
    fulfillmentStatus: p.enum(FULFILLMENT_STATUSES),
    trackingNumber: p.text().nullable(),
    carrier: p.text().nullable(),
    fulfillmentDeadline: p.datetime(),
    workflowId: p.text(),
    workflowConfirmedAt: p.datetime().nullable(),
    paidAt: p.datetime().nullable(),
    paymentId: p.text().nullable(),
    fulfilledAt: p.datetime().nullable(),
    canceledAt: p.datetime().nullable(),
    cancellationReason: p.text().nullable(),
    metadata: p.json<Record<string, string>>(),
    version: p.integer().version(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Order = InferEntity<typeof Order>;

export const MarketplaceListing = defineEntity({
  name: 'MarketplaceListing',
  tableName: 'marketplace_listings',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    marketplace: p.text(),
    externalId: p.text(),
    productId: p.string(),
    storeId: p.string(),
    sku: p.text(),
    title: p.text(),
    price: p.bigint('number'),
    currency: p.text(),
    quantity: p.integer(),
    status: p.text(),
    issues: p.json<string[]>(),
    url: p.text(),
    syncedAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type MarketplaceListing = InferEntity<typeof MarketplaceListing>;
