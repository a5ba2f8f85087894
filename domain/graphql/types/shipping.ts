import { listShipments, shipmentSchema, shipmentsOfOrders, type ShipmentView } from '../../shipping/public.ts';
import { builder } from '../builder.ts';
import { requirePermission } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { connectionOf, rootPage, newestOfParent } from '../pages.ts';
import { OrderRef, orderLoader } from './commerce.ts';

export const ShipmentRef = objectTypeFrom<ShipmentView>('Shipment', shipmentSchema, 'A shipment (shipping:read).');
const ShipmentStatus = enumFrom('ShipmentStatus', shipmentSchema.shape.status.options, 'A shipment\'s status.');

builder.queryField('shipments', (t) => t.connection({
  type: ShipmentRef, nullable: true,
  description: 'Shipments, newest first; filters as GET /v3/shipments.',
  args: { order_id: t.arg.stringList(), status: t.arg({ type: [ShipmentStatus] }), carrier: t.arg.stringList() },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'shipping:read');
    const page = rootPage(args);
    return connectionOf(await listShipments(ctx.em, {
      order_id: args.order_id ?? undefined, status: args.status ?? undefined, carrier: args.carrier ?? undefined,
    }, page), page.limit);
  },
}));

builder.objectField(OrderRef, 'shipments', (t) => t.connection({
  type: ShipmentRef, nullable: true,
  description: 'The order\'s newest shipments (shipping:read).',
  resolve: (order, args, ctx) => newestOfParent(ctx, order.id, {
    permission: 'shipping:read', loader: 'shipments-of-orders', args, parentOf: (s: ShipmentView) => s.order_id,
    read: (ids, limit) => shipmentsOfOrders(ctx.em, ids, limit),
  }),
}));

builder.objectField(ShipmentRef, 'order', (t) => t.field({
  type: OrderRef, nullable: true, description: 'The order it ships (commerce:read).',
  resolve: (shipment, _args, ctx) => {
    requirePermission(ctx, 'commerce:read');
    return orderLoader(ctx).load(shipment.order_id);
  },
}));
