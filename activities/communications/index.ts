import { ApplicationFailure } from '@temporalio/common';
import type { ActivityDeps } from '../../platform/area.ts';
import { finishCall, markRecordingReady, recordCall, recordLegDialed, recordProgress, type CallOutcome } from '../../domain/communications/calls.ts';
import { getMessageRow, messageView, recordMessage, recordMessageStatus } from '../../domain/communications/messages.ts';
import type { Telephony } from '../../domain/communications/telephony/index.ts';
import { CarrierRejectedError, type StatusCallback, type TelephonyAdapter } from '../../domain/communications/telephony/types.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import {
  callStatusSignal, callWorkflowId, carrierKeys, messageWorkflowId,
  type CallStatusValue, type CallView, type CallWorkflowInput, type LegProgress, type MessageView, type MessageWorkflowInput,
} from '../../workflows/communications/shared.ts';

export type CommunicationsActivityDeps = Pick<ActivityDeps, 'orm' | 'telephony' | 'temporal' | 'logger'>;

interface CallRef {
  callId: string;
  accountId: string;
  livemode: boolean;
  requestId: string | null;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/** Carrier refusals are business answers (not retried); outages are retried by the policy. */
async function carrierCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof CarrierRejectedError) throw ApplicationFailure.nonRetryable(err.message, 'CarrierRejected', { code: err.code });
    throw err;
  }
}

export function createCommunicationsActivities({ orm, telephony, temporal, logger }: CommunicationsActivityDeps) {
  const carrierOf = (livemode: boolean): TelephonyAdapter => {
    const c = (telephony as Telephony).carrier(livemode);
    if (!c) throw ApplicationFailure.nonRetryable('No live telephony carrier is configured.', 'CarrierRejected');
    return c;
  };

  /** Where the carrier's callbacks go: a signal to the call's workflow (a finished call ignores them). */
  const deliver = async (cb: StatusCallback): Promise<void> => {
    try {
      await temporal.workflow.getHandle(callWorkflowId(cb.callId)).signal(callStatusSignal, cb);
    } catch (err) {
      logger.debug('status callback not delivered', { call_id: cb.callId, event: cb.event, error: String(err) });
    }
  };

  return {
    async recordCall(input: CallWorkflowInput): Promise<{ view: CallView; secondMs: number }> {
      const view = await recordCall(scopedEm(orm, scopeOf(input)), input, callWorkflowId(input.callId));
      return { view, secondMs: carrierOf(input.livemode).secondMs };
    },

    /** Places a leg with the carrier (once per leg, whatever the retries) and stores its carrier id. */
    async dialLeg(input: CallRef & {
      legId: string; role: 'primary' | 'fallback'; to: string; from: string; callerIdName: string | null; ringTimeout: number; record: boolean;
    }): Promise<{ carrierCallId: string }> {
      const em = scopedEm(orm, scopeOf(input));
      await recordLegDialed(em, { callId: input.callId, legId: input.legId, role: input.role, toNumber: input.to, carrierCallId: null });
      const placed = await carrierCall(() => carrierOf(input.livemode).placeCall({
        idempotencyKey: carrierKeys.dial(input.callId, input.legId), callId: input.callId, legId: input.legId, to: input.to, from: input.from,
        callerIdName: input.callerIdName, ringTimeout: input.ringTimeout, record: input.record,
      }, deliver));
      await recordLegDialed(scopedEm(orm, scopeOf(input)), { callId: input.callId, legId: input.legId, role: input.role, toNumber: input.to, carrierCallId: placed.carrierCallId });
      return placed;
    },

    /** Asks the carrier how a leg is doing (callbacks lost, or their receiver died). */
    async fetchLeg(input: { carrierCallId: string; livemode: boolean }): Promise<LegProgress & { events: StatusCallback[] }> {
      const state = await carrierCall(() => carrierOf(input.livemode).fetchCall(input.carrierCallId));
      return { status: state.status, duration: state.duration, quality: state.quality, events: state.events };
    },

    /**
     * Ends the leg; with `unansweredOnly` (a ring timeout) only a leg that has not been answered is
     * canceled, and an answered one is left to go on: its events say what the callbacks have not yet.
     */
    async hangUpLeg(input: { carrierCallId: string; livemode: boolean; unansweredOnly?: boolean }): Promise<LegProgress & { events: StatusCallback[] }> {
      const carrier = carrierOf(input.livemode);
      const state = await carrierCall(() => (input.unansweredOnly ? carrier.cancel(input.carrierCallId) : carrier.hangUp(input.carrierCallId)));
      return { status: state.status, duration: state.duration, quality: state.quality, events: state.events };
    },

    async recordCallProgress(input: CallRef & { legId: string; status: CallStatusValue }): Promise<CallView> {
      return recordProgress(scopedEm(orm, scopeOf(input)), scopeOf(input), input);
    },

    async finishCall(input: CallRef & Omit<CallOutcome, 'callId' | 'requestId'>): Promise<CallView> {
      return finishCall(scopedEm(orm, scopeOf(input)), scopeOf(input), { ...input });
    },

    /** The recording exists at the carrier once the call has ended: `call.recording.ready`. */
    async collectRecording(input: CallRef): Promise<CallView> {
      return markRecordingReady(scopedEm(orm, scopeOf(input)), scopeOf(input), input.callId, input.requestId);
    },

    async recordMessage(input: MessageWorkflowInput): Promise<{ view: MessageView; secondMs: number }> {
      const view = await recordMessage(scopedEm(orm, scopeOf(input)), input, messageWorkflowId(input.messageId));
      return { view, secondMs: carrierOf(input.livemode).secondMs };
    },

    async sendMessageToProvider(input: { messageId: string; accountId: string; livemode: boolean; requestId: string | null }): Promise<MessageView> {
      const em = scopedEm(orm, scopeOf(input));
      const m = await getMessageRow(em, input.messageId);
      if (m.providerMessageId) return messageView(m);
      const sent = await carrierCall(() => carrierOf(input.livemode).sendMessage({
        idempotencyKey: carrierKeys.message(m.id), app: m.app, to: m.toAddress, from: m.fromNumber, text: m.text ?? null,
        template: m.template ?? null, mediaUrl: m.mediaUrl ?? null,
      }));
      return recordMessageStatus(em, scopeOf(input), { messageId: m.id, status: 'sent', providerMessageId: sent.providerMessageId, requestId: input.requestId });
    },

    async pollMessage(input: { messageId: string; accountId: string; livemode: boolean; requestId: string | null }): Promise<MessageView> {
      const em = scopedEm(orm, scopeOf(input));
      const m = await getMessageRow(em, input.messageId);
      if (!m.providerMessageId) return messageView(m);
      const state = await carrierCall(() => carrierOf(input.livemode).fetchMessage(m.providerMessageId!));
      return recordMessageStatus(em, scopeOf(input), {
        messageId: m.id, status: state.status, failureCode: state.failureCode,
        failureMessage: state.failureCode ? 'The provider could not deliver the message.' : null, requestId: input.requestId,
      });
    },

    async recordMessageStatus(input: { messageId: string; accountId: string; livemode: boolean; requestId: string | null; status: MessageView['status']; failureCode: string; failureMessage: string }): Promise<MessageView> {
      return recordMessageStatus(scopedEm(orm, scopeOf(input)), scopeOf(input), input);
    },
  };
}

export type CommunicationsActivities = ReturnType<typeof createCommunicationsActivities>;
