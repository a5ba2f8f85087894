import { createWebhookActivities } from '../../activities/webhooks/index.ts';
import { webhookRoutes } from '../../api/v3/webhooks/routes.ts';
import { Migration0003Webhooks } from '../../db/migrations/0003-webhooks.ts';
import { Migration0161EventsNotifyAfterCommit } from '../../db/migrations/0161-events-notify-after-commit.ts';
import { defineArea } from '../../platform/area.ts';
import { webhookConsumer } from './consumer.ts';
import { WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint } from './entities.ts';
import { webhookEvents } from './events.ts';
import type { WebhookTransport } from './sender.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** Unset in production; a test's worker sets it to reach its own TLS receiver. */
    webhookTransport?: WebhookTransport;
  }
}

/** Webhooks: endpoints and one delivery workflow per (event, endpoint), signed per Standard Webhooks. */
export const webhooksArea = defineArea({
  name: 'webhooks',
  permissions: ['webhooks'],
  routes: webhookRoutes,
  workflows: new URL('../../workflows/webhooks/index.ts', import.meta.url),
  activities: createWebhookActivities,
  entities: [WebhookEndpoint, WebhookDelivery, WebhookDeliveryAttempt],
  migrations: [
    { name: '0003-webhooks', class: Migration0003Webhooks },
    { name: '0161-events-notify-after-commit', class: Migration0161EventsNotifyAfterCommit },
  ],
  events: webhookEvents,
  consumers: [webhookConsumer],
});
