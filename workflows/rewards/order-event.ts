import { proxyActivities } from '@temporalio/workflow';
import type { RewardsActivities } from '../../activities/rewards/index.ts';
import type { OrderEventInput } from './shared.ts';

const acts = proxyActivities<RewardsActivities>({
  // The activity waits for the customer's loyalty workflow to apply the change.
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 20 },
});

/**
 * What one order or payment event does to a customer's points (`loyalty-event-evt_…`, started by
 * the outbox consumer once per event): a paid order earns by the program's earn rule, a refund or
 * a cancellation reverses what the order earned. The change itself runs in the customer's loyalty
 * workflow (update-with-start), keyed so that a repeated event changes nothing twice.
 */
export async function loyaltyOrderEventWorkflow(input: OrderEventInput): Promise<string> {
  return acts.applyOrderEvent(input);
}
