import { listOrders, orderSchema, ordersByIds, ordersOfCustomers, type OrderView } from '../../commerce/public.ts';
import { builder } from '../builder.ts';
import { requirePermission, type GraphQLContext } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { connectionOf, nestedFirst, rootPage } from '../pages.ts';
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
  resolve: async (customer, args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    const first = nestedFirst(args);
    const status = args.status ?? undefined;
    const rows = await ctx.loaders.byParent('orders-of-customers', { first, status }, (o: OrderView) => o.customer_id,
      (ids) => ordersOfCustomers(ctx.em, ids, first + 1, status)).load(customer.id);
    return connectionOf(rows, first);
  },
}));

builder.objectField(OrderRef, 'customer', (t) => t.field({
  type: CustomerRef, nullable: true, description: 'The customer who placed it (crm:read).',
  resolve: (order, _args, ctx) => {
    requirePermission(ctx, 'crm:read');
    return customerLoader(ctx).load(order.customer_id);
  },
}));
