import { allHandlersFinished, condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { EventActivities } from '../../activities/platform/events.ts';
import { nudgeDispatcherSignal, type DispatcherInput } from './shared.ts';

/**
 * No attempt limit, on purpose: the activity takes no input a domain rule could refuse (it reads the
 * outbox; an event whose planning or start fails stays undispatched and is retried at the next sweep
 * without failing the activity), so what is retried is an outage (PostgreSQL or Temporal down), and
 * giving up would end the dispatcher and leave events undelivered until the next nudge. A refusal
 * (4xx ApiError) would still not be retried (worker/activity-refusals.ts).
 */
function dispatcherActivities(input: DispatcherInput) {
  return proxyActivities<EventActivities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: input.heartbeatTimeoutMs ?? '20s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
  });
}

/** Bounded history: a fresh run after this many rounds (or when Temporal suggests it). */
const ROUNDS_PER_RUN = 500;

/**
 * The outbox sweeper: one per deployment. The worker processes dispatch events themselves as
 * they commit (PostgreSQL NOTIFY → a pass in the process, worker/event-dispatch.ts); this
 * workflow runs the same pass every `sweepMs` (and when a worker's listener starts and nudges it)
 * for what they left: a lost notification, the events of a pass lost with its process. Each batch
 * asks every event consumer which workflows to start and starts them under deterministic ids
 * before marking the events dispatched, so a crash at any point loses nothing and a second pass
 * starts nothing twice.
 */
export async function eventDispatcherWorkflow(input: DispatcherInput): Promise<void> {
  const { dispatchPendingEvents } = dispatcherActivities(input);
  let nudged = true;
  setHandler(nudgeDispatcherSignal, () => {
    nudged = true;
  });

  for (let round = 0; round < ROUNDS_PER_RUN && !workflowInfo().continueAsNewSuggested; round++) {
    await condition(() => nudged, input.sweepMs);
    nudged = false;
    for (;;) {
      const batch = await dispatchPendingEvents({ batchSize: input.batchSize });
      if (!batch.more) break;
    }
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof eventDispatcherWorkflow>(input);
}
