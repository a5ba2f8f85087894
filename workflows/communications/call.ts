import { allHandlersFinished, condition, patched, proxyActivities, proxyLocalActivities, setHandler, log } from '@temporalio/workflow';
import type { CommunicationsActivities } from '../../activities/communications/index.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  ACTIVE_CALL_STATUSES, CARRIER_STEPS, DB_STEPS, FALLBACK_OUTCOMES, awaitCallRecordedUpdate, callStateQuery, callStatusSignal,
  hangupCallUpdate, statusRank, type CallStatusValue, type CallView, type CallWorkflowInput, type LegProgress, type StatusCallback,
} from './shared.ts';

/**
 * The call's database writes are local activities (run by the worker that runs the workflow task:
 * no task-queue round trip, no second workflow task per write), retried like any database step.
 * Writing the call is the step the API's request waits for; each later write (a leg's progress, the
 * end, the recording) follows a callback's signal in that signal's own task. Each is idempotent
 * (statuses only move forwards, the end and the recording are recorded once), as a local activity
 * whose worker died before its task completed runs again.
 */
const local = proxyLocalActivities<CommunicationsActivities>({ ...DB_STEPS, localRetryThreshold: '10 seconds' });
const db = proxyActivities<CommunicationsActivities>(DB_STEPS);
const carrier = proxyActivities<CommunicationsActivities>(CARRIER_STEPS);
/**
 * The writes after the first: local since this patch (docs/benchmarks.md, "Calls"); a call that
 * was running when it was deployed goes on with the server activities its history has.
 */
const WRITES_LOCALLY = 'calls-writes-locally';
const serverWrites = { recordCallProgress: db.recordCallProgress, finishCall: db.finishCall, collectRecording: carrier.collectRecording };
const writes = (): typeof serverWrites => (patched(WRITES_LOCALLY) ? local : serverWrites);

/** Poll the carrier after this many call seconds without a callback (lost callbacks, a dead worker). */
const SILENCE_SECONDS = 10;

interface LegEnd extends LegProgress {
  legId: string;
}

/**
 * One call (`call-call_…`): record it, dial the primary leg and follow the carrier's status
 * callbacks (signals, deduplicated by carrier id and sequence; a status never moves backwards),
 * end ringing as `no_answer` after `ring_timeout`, dial the fallback number once when the primary
 * leg was busy, unanswered or failed, then record the outcome (duration, cost, MOS) and the
 * recording. When callbacks stop (lost, or the worker that received them died), the carrier is
 * asked for the leg's state. The `hangupCall` update ends an active call.
 */
export async function callWorkflow(input: CallWorkflowInput): Promise<CallView> {
  let view: CallView | undefined;
  let rejected: ReturnType<typeof refuse> | undefined;
  let status: CallStatusValue = 'queued';
  let finished = false;
  let hangupRequested = false;
  let activeLeg: 'primary' | 'fallback' = 'primary';
  let carrierCallId: string | null = null;
  let secondMs = 1000;
  const seen = new Set<string>();
  const inbox: StatusCallback[] = [];
  const counters = { callbacksSeen: 0, duplicatesIgnored: 0, staleIgnored: 0 };
  const ref = { callId: input.callId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId };

  const accept = (cb: StatusCallback): void => {
    const key = `${cb.carrierCallId}:${cb.sequence}`;
    if (seen.has(key)) {
      counters.duplicatesIgnored++;
      return;
    }
    seen.add(key);
    counters.callbacksSeen++;
    inbox.push(cb);
  };

  setHandler(awaitCallRecordedUpdate, async () => {
    await condition(() => view !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    return view!;
  });
  setHandler(callStatusSignal, accept);
  setHandler(callStateQuery, () => ({ callId: input.callId, status, activeLeg, carrierCallId, hangupRequested, secondMs, ...counters }));
  setHandler(hangupCallUpdate, async (_request: { reason: string | null }) => {
    hangupRequested = true;
    await condition(() => finished);
    return view!;
  }, {
    validator: (_request: { reason: string | null }) => {
      if (!ACTIVE_CALL_STATUSES.includes(status) || finished) {
        throw refuse(REFUSALS.invalidTransition, `the call is ${status}; only a queued, initiated, ringing or in-progress call can be hung up`, { current_state: status });
      }
    },
  });

  try {
    const recorded = await local.recordCall(input);
    view = recorded.view;
    secondMs = recorded.secondMs;
  } catch (err) {
    rejected = refuse(REFUSALS.rejected, 'The call could not be recorded.', { cause: String(err) });
    await condition(allHandlersFinished);
    throw rejected;
  }

  const advance = async (legId: string, next: CallStatusValue, legStatus: { value: CallStatusValue }): Promise<void> => {
    if (statusRank(next) <= statusRank(legStatus.value) || statusRank(next) >= 4) return;
    legStatus.value = next;
    if (statusRank(next) > statusRank(status)) {
      status = next;
      recordStatus(status);
    }
    view = await writes().recordCallProgress({ ...ref, legId, status: next });
  };

  async function runLeg(role: 'primary' | 'fallback', legId: string, to: string): Promise<LegEnd> {
    activeLeg = role;
    const legStatus = { value: 'queued' as CallStatusValue };
    let dialed: { carrierCallId: string };
    try {
      dialed = await carrier.dialLeg({ ...ref, legId, role, to, from: input.fromNumber, callerIdName: input.callerIdName, ringTimeout: input.ringTimeout, record: input.recordCall });
    } catch (err) {
      log.warn('dial failed for good', { callId: input.callId, legId, error: String(err) });
      return { legId, status: 'failed', duration: 0, quality: [] };
    }
    carrierCallId = dialed.carrierCallId;
    // Counted from when the carrier accepted the leg (not from before the dial, which may be retried).
    const ringDeadline = Date.now() + input.ringTimeout * secondMs;
    let lastHeard = Date.now();
    const end = ({ status, duration, quality }: LegProgress): LegEnd => ({ legId, status, duration, quality });

    for (;;) {
      if (hangupRequested) {
        const state = await carrier.hangUpLeg({ carrierCallId: dialed.carrierCallId, livemode: input.livemode });
        return end(state);
      }
      while (inbox.length) {
        const cb = inbox.shift()!;
        if (cb.carrierCallId !== dialed.carrierCallId) {
          counters.staleIgnored++; // a late callback of an earlier leg
          continue;
        }
        if (cb.event === 'completed') {
          return end({ status: cb.callStatus ?? 'completed', duration: cb.duration ?? 0, quality: cb.quality ?? [] });
        }
        const next: CallStatusValue = cb.event === 'answered' ? 'in_progress' : cb.event;
        if (statusRank(next) <= statusRank(legStatus.value)) counters.staleIgnored++;
        await advance(legId, next, legStatus);
      }
      const answered = statusRank(legStatus.value) >= statusRank('in_progress');
      if (!answered && Date.now() >= ringDeadline) {
        // ring_timeout: stop ringing. A leg the carrier answered meanwhile (its callback not seen yet:
        // late, or lost) is left alone, and goes on as answered with the events the carrier gave.
        const state = await carrier.hangUpLeg({ carrierCallId: dialed.carrierCallId, livemode: input.livemode, unansweredOnly: true });
        if (state.status === 'canceled') return end({ status: 'no_answer', duration: 0, quality: [] });
        if (state.status !== 'in_progress') return end(state);
        for (const cb of state.events) accept(cb);
        if (!inbox.some((cb) => cb.carrierCallId === dialed.carrierCallId && cb.event === 'answered')) await advance(legId, 'in_progress', legStatus);
        lastHeard = Date.now();
        continue;
      }
      const pollAt = lastHeard + SILENCE_SECONDS * secondMs;
      const wakeAt = answered ? pollAt : Math.min(pollAt, ringDeadline);
      const heard = await condition(
        () => hangupRequested || inbox.length > 0,
        Math.max(1, wakeAt - Date.now()),
      );
      if (heard) {
        lastHeard = Date.now();
      } else if (Date.now() >= pollAt) {
        const state = await carrier.fetchLeg({ carrierCallId: dialed.carrierCallId, livemode: input.livemode });
        for (const cb of state.events) accept(cb);
        lastHeard = Date.now();
      }
    }
  }

  const legs: LegEnd[] = [await runLeg('primary', input.primaryLegId, input.toNumber)];
  if (FALLBACK_OUTCOMES.includes(legs[0]!.status) && input.fallbackNumber && !hangupRequested) {
    legs.push(await runLeg('fallback', input.fallbackLegId, input.fallbackNumber));
  }
  const last = legs.at(-1)!;
  const failure = last.status === 'failed' ? { code: 'carrier_error', message: 'The carrier could not complete the call.' }
    : last.status === 'busy' ? { code: 'busy', message: 'The destination was busy.' }
      : last.status === 'no_answer' ? { code: 'no_answer', message: `Nobody answered within ${input.ringTimeout} seconds.` }
        : last.status === 'canceled' ? { code: 'canceled', message: 'The call was hung up before it was answered.' } : null;
  view = await writes().finishCall({
    ...ref, legId: last.legId, status: last.status, duration: last.duration, quality: last.quality, failure,
    legs: legs.map((l) => ({ legId: l.legId, status: l.status, duration: l.duration })),
  });
  status = view.status;
  recordStatus(status);
  if (input.recordCall && view.status === 'completed' && view.duration > 0) {
    view = await writes().collectRecording({ ...ref });
  }
  finished = true;
  await condition(allHandlersFinished);
  return view;
}
