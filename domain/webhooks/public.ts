/** What other areas (the dashboard) may use of webhooks: reading endpoints and deliveries, replaying one. */
export { listEndpoints, listDeliveries, getDelivery, type EndpointView, type DeliveryView } from './service.ts';
export { replayDelivery, type DeliveryStarter } from './actions.ts';
/** The endpoint schema (GraphQL's WebhookEndpoint type). */
export { endpointSchema } from './schemas.ts';
