/**
 * What crosses the layers for the communications area: pure (no Node, ORM or activity imports),
 * since workflows import it.
 */
import { defineQuery, defineSignal, defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type { CallView, MessageView } from '../../domain/communications/schemas.ts';
import type { QualitySample } from '../../domain/communications/quality.ts';
import type { StatusCallback } from '../../domain/communications/telephony/types.ts';
import { workflowIds } from '../kit/ids.ts';

export type { CallView, MessageView, StatusCallback, QualitySample };

/** `call-call_…`. */
export const callWorkflowIds = workflowIds('call');
export const callWorkflowId = callWorkflowIds.id;
/** `message-cmsg_…`. */
export const messageWorkflowId = workflowIds('message').id;

/** Carrier idempotency keys, from our own ids: a retried dial reaches the carrier as the same call. */
export const carrierKeys = {
  dial: (callId: string, legId: string) => `${callId}:${legId}:dial`,
  message: (messageId: string) => `${messageId}:send`,
};

export type CallStatusValue = CallView['status'];
export const ACTIVE_CALL_STATUSES: readonly CallStatusValue[] = ['queued', 'initiated', 'ringing', 'in_progress'];
export const FALLBACK_OUTCOMES: readonly CallStatusValue[] = ['busy', 'no_answer', 'failed'];

/** Order of a call's statuses: a status never moves backwards (every terminal one ranks last). */
export function statusRank(status: CallStatusValue): number {
  switch (status) {
    case 'queued': return 0;
    case 'initiated': return 1;
    case 'ringing': return 2;
    case 'in_progress': return 3;
    default: return 4;
  }
}

export interface CallWorkflowInput {
  callId: string;
  accountId: string;
  livemode: boolean;
  toNumber: string;
  fromNumber: string;
  callerIdName: string | null;
  recordCall: boolean;
  ringTimeout: number;
  fallbackNumber: string | null;
  /** The PBX extension the call connects (absent in histories recorded before it existed). */
  extensionId?: string | null;
  metadata: Record<string, string>;
  primaryLegId: string;
  fallbackLegId: string;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

export interface MessageWorkflowInput {
  messageId: string;
  accountId: string;
  livemode: boolean;
  app: MessageView['app'];
  to: string;
  from: string;
  text: string | null;
  template: MessageView['template'];
  mediaUrl: string | null;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

/** What a leg's progress looks like to the workflow. */
export interface LegProgress {
  status: CallStatusValue;
  duration: number;
  quality: QualitySample[];
}

/** A query's answer: the call workflow's live state. */
export interface CallLiveState {
  callId: string;
  status: CallStatusValue;
  activeLeg: 'primary' | 'fallback';
  carrierCallId: string | null;
  callbacksSeen: number;
  duplicatesIgnored: number;
  staleIgnored: number;
  hangupRequested: boolean;
  secondMs: number;
}

/** Answers once the call is recorded (update-with-start). */
export const awaitCallRecordedUpdate = defineUpdate<CallView>('awaitCallRecorded');
/** Hangs up an active call; answers with the call once it has ended. */
export const hangupCallUpdate = defineUpdate<CallView, [{ reason: string | null }]>('hangupCall');
/** The carrier's status callbacks (deduplicated by the workflow). */
export const callStatusSignal = defineSignal<[StatusCallback]>('callStatus');
export const callStateQuery = defineQuery<CallLiveState>('callState');

export const awaitMessageAcceptedUpdate = defineUpdate<MessageView>('awaitMessageAccepted');
export const messageStateQuery = defineQuery<{ status: MessageView['status']; polls: number }>('messageState');

/**
 * Database steps: short, retried with backoff. A refusal (a 4xx ApiError) is made non-retryable by
 * the workers' interceptor. Bounded to an hour: a call whose records cannot be written for an hour
 * fails its workflow visibly instead of retrying forever.
 */
export const DB_STEPS = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 hour',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
} satisfies ActivityOptions;

/**
 * Carrier steps: every retry carries the same idempotency key; bounded to 10 minutes (a call that
 * cannot be placed for that long fails as `failed` with `carrier_unavailable`).
 */
export const CARRIER_STEPS = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: ['CarrierRejected'] },
} satisfies ActivityOptions;
