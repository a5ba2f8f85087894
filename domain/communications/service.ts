import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { failureToProblem, searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { callWorkflow } from '../../workflows/communications/call.ts';
import type { messageWorkflow } from '../../workflows/communications/message.ts';
import {
  awaitCallRecordedUpdate, awaitMessageAcceptedUpdate, callStateQuery, callWorkflowId, hangupCallUpdate, messageWorkflowId,
  type CallLiveState, type CallView, type MessageView,
} from '../../workflows/communications/shared.ts';
import { findTestClock } from '../billing/public.ts';
import type { Scope } from '../scope.ts';
import { checkCallerNumber, checkExtension, findCallByRequestKey, getCall } from './calls.ts';
import type { MessageTemplate, MessagingApp } from './entities.ts';
import { checkSender, checkServiceWindow, findMessageByRequestKey } from './messages.ts';
import { carrierFor } from './numbers.ts';
import type { Telephony } from './telephony/index.ts';

export interface CommsContext {
  em: EntityManager;
  temporal: TemporalHandle;
  telephony: Telephony;
}

export interface StartCallInput {
  callId: string;
  toNumber: string;
  fromNumber: string;
  callerIdName: string | null;
  recordCall: boolean;
  ringTimeout: number;
  fallbackNumber: string | null;
  extensionId: string | null;
  metadata: Record<string, string>;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

/**
 * Places a call: the caller's number is checked (provisioned, with voice), then the call's workflow
 * starts with an update that answers once the call is recorded (`queued`). Same request key → the
 * same call.
 */
export async function startCall(ctx: CommsContext, scope: Scope, input: StartCallInput): Promise<CallView> {
  if (input.requestIdempotencyKey) {
    const existing = await findCallByRequestKey(ctx.em, input.requestIdempotencyKey);
    if (existing) return existing;
  }
  carrierFor(ctx.telephony, scope);
  if (input.fallbackNumber && input.fallbackNumber === input.toNumber) {
    throw validationFailed([{ path: 'routing_options.fallback_number', message: 'the fallback number must differ from to_number' }]);
  }
  await checkCallerNumber(ctx.em, input.fromNumber);
  if (input.extensionId) await checkExtension(ctx.em, input.extensionId);
  try {
    return await startResource<typeof callWorkflow, CallView, []>(ctx.temporal, {
      workflowType: 'callWorkflow',
      workflowId: callWorkflowId(input.callId),
      taskQueue: ctx.temporal.taskQueue('communications'),
      args: [{
        ...input, accountId: scope.accountId, livemode: scope.livemode, primaryLegId: newId('callLeg'), fallbackLegId: newId('callLeg'),
      }],
      searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: input.callId, status: 'queued' }),
      update: awaitCallRecordedUpdate,
      updateArgs: [],
    });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && input.requestIdempotencyKey) {
      const existing = await findCallByRequestKey(ctx.em.fork(), input.requestIdempotencyKey);
      if (existing) return existing;
    }
    throw (await failureToProblem(err, {
      resource: `Call ${input.callId}`,
      suggestion: 'Retry with the same Idempotency-Key to get the call that was recorded.',
      currentState: async () => (await getCall(ctx.em.fork(), input.callId)).status,
    })) ?? err;
  }
}

/** Hangs up an active call (an update; 409 with `current_state` once it has ended). */
export async function hangupCall(ctx: CommsContext, callId: string, reason: string | null): Promise<CallView> {
  const call = await getCall(ctx.em, callId); // 404 for another account's call
  return sendUpdate(
    () => ctx.temporal.client.workflow.getHandle(call.workflow_id).executeUpdate(hangupCallUpdate, { args: [{ reason }] }),
    {
      resource: `Call ${callId}`,
      suggestion: 'Only a queued, initiated, ringing or in-progress call can be hung up; GET the call to see how it ended.',
      currentState: async () => (await getCall(ctx.em.fork(), callId)).status,
    },
  );
}

/** The call workflow's live state (a query): for operators. */
export async function callLiveState(temporal: TemporalHandle, workflowId: string): Promise<CallLiveState> {
  return temporal.client.workflow.getHandle(workflowId).query(callStateQuery);
}

/** "Now" for a request: the test clock's frozen time when one is given (test mode only), else the time. */
export async function requestNow(em: EntityManager, scope: Scope, testClock: string | null): Promise<Date> {
  if (!testClock) return new Date();
  if (scope.livemode) {
    throw validationFailed([{ path: 'test_clock', message: 'test clocks exist in test mode only; remove test_clock for live requests' }]);
  }
  try {
    return (await findTestClock(em, testClock)).frozenTime;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw validationFailed([{ path: 'test_clock', message: `no test clock with id '${testClock}' exists in this account` }]);
    throw err;
  }
}

export interface SendMessageInput {
  messageId: string;
  app: MessagingApp;
  to: string;
  from: string;
  text: string | null;
  template: MessageTemplate | null;
  mediaUrl: string | null;
  testClock: string | null;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

/**
 * Sends a message through a messaging app: the sender must be provisioned (sms feature); free text
 * on WhatsApp and Messenger only within the 24-hour service window; then the message's workflow
 * hands it to the provider and follows its receipts.
 */
export async function sendMessage(ctx: CommsContext, scope: Scope, input: SendMessageInput): Promise<MessageView> {
  if (input.requestIdempotencyKey) {
    const existing = await findMessageByRequestKey(ctx.em, input.requestIdempotencyKey);
    if (existing) return existing;
  }
  carrierFor(ctx.telephony, scope);
  const now = await requestNow(ctx.em, scope, input.testClock);
  await checkSender(ctx.em, input.from);
  await checkServiceWindow(ctx.em, input, now);
  return startResource<typeof messageWorkflow, MessageView, []>(ctx.temporal, {
    workflowType: 'messageWorkflow',
    workflowId: messageWorkflowId(input.messageId),
    taskQueue: ctx.temporal.taskQueue('communications'),
    args: [{
      messageId: input.messageId, accountId: scope.accountId, livemode: scope.livemode, app: input.app, to: input.to, from: input.from,
      text: input.text, template: input.template, mediaUrl: input.mediaUrl, requestIdempotencyKey: input.requestIdempotencyKey, requestId: input.requestId,
    }],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: input.messageId, status: 'accepted' }),
    update: awaitMessageAcceptedUpdate,
    updateArgs: [],
  });
}
