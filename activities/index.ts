import { createBillingActivities } from './billing.ts';
import { createCommerceActivities } from './commerce.ts';
import { createCrmActivities } from './crm.ts';
import { createPaymentActivities, type PaymentActivityDeps } from './payments.ts';
import { createPlatformActivities, type PlatformActivityDeps } from './platform.ts';
import { createEventActivities, type EventActivityDeps } from './events.ts';
import { createWebhookActivities, type WebhookActivityDeps } from './webhooks.ts';

/** Every area's activities; the worker registers them on the area's task queue. */
export type ActivityDeps = PlatformActivityDeps & PaymentActivityDeps & WebhookActivityDeps & EventActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return {
    platform: createPlatformActivities(deps),
    commerce: createCommerceActivities(deps),
    crm: createCrmActivities(deps),
    webhooks: { ...createWebhookActivities(deps), ...createEventActivities(deps) },
    payments: createPaymentActivities(deps),
    billing: createBillingActivities(deps),
  };
}
