import { condition, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities/webhooks/index.ts';
import { retryNowSignal, type AttemptInput, type AttemptResult, type DeliveryInput, type DeliveryResult, type DeliveryResume, type DeliverySettings } from './shared.ts';

/**
 * The first attempt runs as a local activity: most deliveries succeed at once, and this way a
 * delivery costs one workflow task instead of two plus an activity task. Its bound is the largest
 * timeout the configuration allows (120 s) plus margin; the attempt enforces the configured one.
 */
const local = proxyLocalActivities<WebhookActivities>({
  startToCloseTimeout: '150s',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

/**
 * One event to one endpoint (`webhook-delivery-evt_…-whk_…`). Events from the outbox get their
 * first attempt from the dispatcher itself and this workflow only when it failed (`resume`: it
 * starts with the wait before the first retry); test events and manual replays start here. Each attempt checks the
 * destination, signs, posts, records the attempt and says when to try again; between attempts the
 * workflow waits on a durable timer, which `retryNowSignal` cuts short. Retries run as regular
 * activities that heartbeat while the receiver is waited for: a worker that dies mid-attempt stops
 * heartbeating and the attempt runs again on another worker, with the same `webhook-id` (a worker
 * that dies during the first, local, attempt is noticed when its workflow task times out).
 */
export async function webhookDeliveryWorkflow(input: DeliveryInput, resume?: DeliveryResume): Promise<DeliveryResult> {
  let retryRequested = false;
  setHandler(retryNowSignal, () => {
    retryRequested = true;
  });

  let settings: DeliverySettings | undefined;
  const remote = async (attempt: AttemptInput): Promise<AttemptResult> => {
    settings ??= await local.deliverySettings();
    const { attemptDelivery } = proxyActivities<WebhookActivities>({
      startToCloseTimeout: settings.timeoutMs + 30_000,
      heartbeatTimeout: settings.heartbeatTimeoutMs,
      // Only for infrastructure failures (database down, worker lost): the receiver's failures are
      // outcomes of a successful activity, retried on the delivery schedule below. No attempt limit,
      // on purpose: giving up would end the delivery without its outcome recorded; a refusal (4xx
      // ApiError, e.g. the endpoint deleted) is not retried (worker/activity-refusals.ts).
      retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
    });
    return attemptDelivery(attempt);
  };

  const { workflowId, runId } = workflowInfo();
  let kind = input.kind;
  const firstIndex = resume?.retryIndex ?? 0;
  if (resume) await condition(() => retryRequested, resume.delayMs);
  for (let retryIndex = firstIndex; ; retryIndex++) {
    retryRequested = false;
    const attempt: AttemptInput = { ...input, kind, retryIndex, workflowId, attemptKey: `${runId}:${retryIndex}` };
    let result: AttemptResult;
    if (retryIndex === 0) {
      // An infrastructure failure of the fast path (database down) falls back to a regular activity.
      result = await local.attemptDelivery(attempt).catch(() => remote(attempt));
    } else {
      result = await remote(attempt);
    }
    if (result.outcome === 'retry') {
      await condition(() => retryRequested, result.delayMs ?? 0);
      continue;
    }
    // A replay asked for while the last attempt ran would otherwise be lost with this run: make it.
    if (retryRequested && (result.outcome === 'failed' || result.outcome === 'delivered')) {
      kind = input.kind === 'test' ? 'test' : 'manual';
      continue;
    }
    return { deliveryId: result.deliveryId, outcome: result.outcome, attempts: retryIndex - firstIndex + 1 };
  }
}
