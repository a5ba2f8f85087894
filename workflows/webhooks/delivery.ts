import { condition, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities/webhooks.ts';
import { retryNowSignal, type DeliveryInput, type DeliveryResult } from './shared.ts';

const { deliverySettings } = proxyLocalActivities<WebhookActivities>({ startToCloseTimeout: '10s' });

/**
 * One event to one endpoint (`webhook-delivery-evt_…-whk_…`). Each attempt is one activity that
 * checks the destination, signs, posts, records the attempt and says when to try again; between
 * attempts the workflow waits on a durable timer, which `retryNowSignal` cuts short. A worker that
 * dies mid-attempt stops heartbeating, so the attempt runs again on another worker with the same
 * `webhook-id`.
 */
export async function webhookDeliveryWorkflow(input: DeliveryInput): Promise<DeliveryResult> {
  let retryRequested = false;
  setHandler(retryNowSignal, () => {
    retryRequested = true;
  });

  const settings = await deliverySettings();
  const { attemptDelivery } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: settings.timeoutMs + 30_000,
    heartbeatTimeout: settings.heartbeatTimeoutMs,
    // Only for infrastructure failures (database down, worker lost): the receiver's failures are
    // outcomes of a successful activity, retried on the delivery schedule below.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
  });

  const { workflowId, runId } = workflowInfo();
  let kind = input.kind;
  for (let retryIndex = 0; ; retryIndex++) {
    retryRequested = false;
    const result = await attemptDelivery({ ...input, kind, retryIndex, workflowId, attemptKey: `${runId}:${retryIndex}` });
    if (result.outcome === 'retry') {
      await condition(() => retryRequested, result.delayMs ?? 0);
      continue;
    }
    // A replay asked for while the last attempt ran would otherwise be lost with this run: make it.
    if (retryRequested && (result.outcome === 'failed' || result.outcome === 'delivered')) {
      kind = input.kind === 'test' ? 'test' : 'manual';
      continue;
    }
    return { deliveryId: result.deliveryId, outcome: result.outcome, attempts: retryIndex + 1 };
  }
}
