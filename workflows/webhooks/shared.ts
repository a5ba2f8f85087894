import { defineSignal } from '@temporalio/workflow';

/**
 * What crosses the layers for webhooks: workflow ids, inputs, results
 * and messages. Pure (no Node, ORM or activity imports), since workflows import it.
 */
export const WEBHOOKS_AREA = 'webhooks' as const;

/** `webhook-delivery-evt_…-whk_…`: one delivery workflow per (event, endpoint). */
export function deliveryWorkflowId(eventId: string, endpointId: string): string {
  return `webhook-delivery-${eventId}-${endpointId}`;
}

/**
 * `event`: fanned out from the outbox, retried on the schedule for up to the window.
 * `test`: POST /v3/webhooks/{id}/test, one attempt (even to a disabled endpoint).
 * `manual`: a replay by hand of a delivery whose workflow had finished, one attempt.
 */
export type DeliveryKind = 'event' | 'test' | 'manual';

export interface DeliveryInput {
  eventId: string;
  endpointId: string;
  accountId: string;
  livemode: boolean;
  kind: DeliveryKind;
}

/**
 * A delivery whose first attempt the outbox dispatcher made, and failed: the workflow starts with
 * the wait before retry `retryIndex` (`delayMs`, as the attempt computed it) and goes on from there.
 */
export interface DeliveryResume {
  retryIndex: number;
  delayMs: number;
}

export interface DeliverySettings {
  timeoutMs: number;
  heartbeatTimeoutMs: number;
}

export interface AttemptInput extends DeliveryInput {
  /** 0 for the first attempt of this run; indexes the retry schedule. */
  retryIndex: number;
  workflowId: string;
  /** Identifies this attempt across activity retries (a worker that died mid-attempt). */
  attemptKey: string;
}

/**
 * `retry`: failed, try again after `delayMs`. `delivered` and `failed` are final (`failed`: window
 * over, one-shot attempt failed, or 410). `abandoned`: the endpoint was deleted or disabled.
 * `skipped`: this delivery had already been made (a second run of the same delivery).
 */
export type AttemptOutcome = 'delivered' | 'retry' | 'failed' | 'abandoned' | 'skipped';

export interface AttemptResult {
  deliveryId: string | null;
  outcome: AttemptOutcome;
  delayMs: number | null;
}

export interface DeliveryResult {
  deliveryId: string | null;
  outcome: Exclude<AttemptOutcome, 'retry'>;
  attempts: number;
}

/** Makes a waiting delivery try again at once (manual retry). */
export const retryNowSignal = defineSignal('retryNow');
