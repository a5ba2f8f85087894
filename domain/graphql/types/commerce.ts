import { z } from 'zod';
import {
  createOrderBody, getStock, placeOrder, inventoryLevelSchema, listOrders, listProducts, orderSchema, ordersByIds, ordersOfCustomers, productSchema, productsByIds, stockOfSkus,
  type InventoryLevelView, type OrderView, type ProductView,
} from '../../commerce/public.ts';
import { builder } from '../builder.ts';
import { requirePermission, type GraphQLContext } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { inputTypeFrom, objectTypeFrom } from '../from-zod.ts';
import { validInput } from '../input.ts';
import { connectionOf, rootPage, newestOfParent } from '../pages.ts';
import { CustomerRef, customerLoader } from './customers.ts';

export const OrderRef = objectTypeFrom<OrderView>('Order', orderSchema, 'An order (commerce:read); amounts in minor units, line items as JSON.');
const OrderStatus = enumFrom('OrderStatus', orderSchema.shape.status.options, 'An order\'s status.');

/** The request's loader of orders by id (for `order` on shipments). */
export function orderLoader(ctx: GraphQLContext) {
  return ctx.loaders.byId('orders', (ids) => ordersByIds(ctx.em, ids));
}

builder.queryField('order', (t) => t.field({
  type: OrderRef, nullable: true,
  description: 'One order by id (null when it does not exist in the key\'s account and mode).',
  args: { id: t.arg.string({ required: true }) },
  resolve: (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    return orderLoader(ctx).load(args.id);
  },
}));

builder.queryField('orders', (t) => t.connection({
  type: OrderRef, nullable: true,
  description: 'Orders, newest first; filters as GET /v3/orders.',
  args: { customer_id: t.arg.stringList(), store_id: t.arg.stringList(), status: t.arg({ type: [OrderStatus] }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    const page = rootPage(args);
    return connectionOf(await listOrders(ctx.em, {
      customer_id: args.customer_id ?? undefined, store_id: args.store_id ?? undefined, status: args.status ?? undefined,
    }, page), page.limit);
  },
}));

builder.objectField(CustomerRef, 'orders', (t) => t.connection({
  type: OrderRef, nullable: true,
  description: 'The customer\'s newest orders (commerce:read).',
  args: { status: t.arg({ type: [OrderStatus] }) },
  resolve: (customer, args, ctx) => newestOfParent(ctx, customer.id, {
    permission: 'commerce:read', loader: 'orders-of-customers', args, parentOf: (o: OrderView) => o.customer_id,
    read: (ids, limit, status) => ordersOfCustomers(ctx.em, ids, limit, status),
  }),
}));

builder.objectField(OrderRef, 'customer', (t) => t.field({
  type: CustomerRef, nullable: true, description: 'The customer who placed it (crm:read).',
  resolve: (order, _args, ctx) => {
    requirePermission(ctx, 'crm:read');
    return customerLoader(ctx).load(order.customer_id);
  },
}));

export const ProductRef = objectTypeFrom<ProductView>('Product', productSchema, 'A product of a store (commerce:read); prices in minor units, variants and inventory settings as JSON.');
export const InventoryLevelRef = objectTypeFrom<InventoryLevelView>('InventoryLevel', inventoryLevelSchema, 'Stock of one SKU in one warehouse (commerce:read): on hand, reserved, available.');

/** The request's loader of every warehouse's stock of a SKU (one statement for all the SKUs asked). */
function stockLoader(ctx: GraphQLContext) {
  return ctx.loaders.byParent('stock-of-skus', null, (l: InventoryLevelView) => l.sku, (skus) => stockOfSkus(ctx.em, ctx.caller, skus));
}

builder.queryField('product', (t) => t.field({
  type: ProductRef, nullable: true,
  description: 'One product by id (null when it does not exist in the key\'s account and mode).',
  args: { id: t.arg.string({ required: true }) },
  resolve: (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    return ctx.loaders.byId('products', (ids) => productsByIds(ctx.em, ids)).load(args.id);
  },
}));

builder.queryField('products', (t) => t.connection({
  type: ProductRef, nullable: true,
  description: 'Products, newest first; filters as GET /v3/stores/{store_id}/products (here across stores).',
  args: {
    store_id: t.arg.stringList(), sku: t.arg.stringList(), category: t.arg.stringList({ description: 'Products in any of these categories.' }),
    q: t.arg.string({ description: 'Text matched literally (case-insensitive) in name, SKU and description.' }),
  },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    const page = rootPage(args);
    const filters = validInput(z.strictObject({
      store_id: z.array(z.string().min(1).max(64)).max(100).optional(),
      sku: z.array(z.string().min(1).max(64)).max(100).optional(),
      category: z.array(z.string().min(1).max(100)).max(50).optional(),
      q: z.string().min(1).max(200).optional(),
    }), { store_id: args.store_id ?? undefined, sku: args.sku ?? undefined, category: args.category ?? undefined, q: args.q ?? undefined });
    return connectionOf(await listProducts(ctx.em, filters, page), page.limit);
  },
}));

builder.queryField('stock', (t) => t.field({
  type: [InventoryLevelRef], nullable: true,
  description: 'Stock of a SKU in every warehouse, as GET /v3/inventory/{sku}/stock (not_found for a SKU the account does not know).',
  args: { sku: t.arg.string({ required: true }) },
  resolve: (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    return getStock(ctx.em, ctx.caller, validInput(z.string().min(1).max(64), args.sku, 'sku'));
  },
}));

builder.objectField(ProductRef, 'stock', (t) => t.field({
  type: [InventoryLevelRef], nullable: true,
  description: 'The product\'s stock (its SKU) in every warehouse that holds a row for it (commerce:read).',
  resolve: (product, _args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    return stockLoader(ctx).load(product.sku);
  },
}));

const CreateOrderInput = inputTypeFrom('CreateOrderInput', createOrderBody, 'The body of POST /v3/orders, validated by the same schema (errors name input.<field>).');

builder.mutationField('createOrder', (t) => t.field({
  type: OrderRef,
  description: 'Place an order (commerce:write), as POST /v3/orders: reserves stock atomically; its fulfilment workflow starts from order.created. With an Idempotency-Key a retry answers the same order.',
  args: { input: t.arg({ type: CreateOrderInput, required: true }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'commerce:write');
    const body = validInput(createOrderBody, args.input, 'input');
    const claimedId = ctx.idempotencyKey === null ? undefined : await ctx.resourceId('order');
    return placeOrder(ctx.em, ctx.caller, body, ctx.requestId, claimedId);
  },
}));
