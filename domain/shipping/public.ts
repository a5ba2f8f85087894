/** What other areas may use of shipping: read-only shipment lists (GraphQL's loaders) and the shipment schema. */
export { listShipments, shipmentsOfOrders, type ShipmentFilters } from './service.ts';
export { shipmentSchema, type ShipmentView } from './schemas.ts';
