import { createPaymentActivities, type PaymentActivityDeps } from './payments.ts';
import { createPlatformActivities, type PlatformActivityDeps } from './platform.ts';

/** Every area's activities; the worker registers them on the area's task queue. */
export type ActivityDeps = PlatformActivityDeps & PaymentActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return {
    platform: createPlatformActivities(deps),
    payments: createPaymentActivities(deps),
  };
}
