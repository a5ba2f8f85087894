import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { RewardsActivities } from '../../activities/rewards/index.ts';
import { Mutex, continueAsNewDue, continueAsNewWhenSuggested, setExclusiveUpdateHandler } from '../kit/entity.ts';
import {
  adjustPointsUpdate, advanceClockUpdate, awardPointsUpdate, loyaltyProgressQuery, reevaluateTierUpdate, reversePointsUpdate,
  type LoyaltyProgress, type LoyaltyWorkflowInput,
} from './shared.ts';

const acts = proxyActivities<RewardsActivities>({
  startToCloseTimeout: '30 seconds',
  // Database steps: retried through an outage of a few minutes, then the update (or the timer run) fails visibly.
  retry: { initialInterval: '500 ms', maximumInterval: '30 seconds', maximumAttempts: 12 },
});

/** After a timed run that left something due (it should not), wait this long before trying again. */
const RETRY_DUE_MS = 60_000;

/**
 * One customer's loyalty account over time (`loyalty-cus_…`): the durable timers of its grants
 * (pending points become available when the return window closes, remaining points expire) and
 * of its tier's anniversary review. The ledger lives in PostgreSQL; this workflow decides when.
 * Awards, reversals, adjustments and tier re-evaluations arrive as updates (their activity
 * answers with the next due time); timed work runs one batch at a time behind a lock. On a sandbox program's test clock the
 * workflow sets no timers: it runs what is due when the clock is advanced (an update that answers
 * once everything due up to the new time has run, each change at its own due time).
 */
export async function loyaltyWorkflow(input: LoyaltyWorkflowInput): Promise<void> {
  const ref = { accountId: input.accountId, livemode: input.livemode, customerId: input.customerId };
  let clockNow = input.clockNow;
  let nextDue: number | null = input.nextDueAt ?? null;
  let processed = 0;
  let caughtUpTo = 0;
  let woken = false;
  const lock = new Mutex();

  const now = () => clockNow ?? Date.now();
  const adoptClock = (clock: number | null) => {
    if (clock !== null && (clockNow === null || clock > clockNow)) clockNow = clock;
  };
  const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
  /** Due times learned while a timed batch ran (its own answer may predate them). */
  let learnedDuringRun: number | null = null;
  const learnDue = (due: number | null) => {
    nextDue = earliest(nextDue, due);
    learnedDuringRun = earliest(learnedDuringRun, due);
    woken = true;
  };
  const progress = (): LoyaltyProgress => ({ clockNow, nextDueAt: nextDue, processed, caughtUpTo });
  /** Everything due up to now, in batches; stops when nothing more is due. */
  const runDue = async () => {
    const t = now();
    while (nextDue !== null && nextDue <= t) {
      learnedDuringRun = null;
      const r = await acts.processDue({ ...ref, now: t });
      processed += r.processed;
      nextDue = earliest(r.nextDueAt, learnedDuringRun);
      if (r.processed === 0) break;
    }
    caughtUpTo = t;
  };

  setHandler(loyaltyProgressQuery, progress);
  // Changes of the ledger run side by side: PostgreSQL serializes them on the customer's account
  // row. Each answers with the next due time as it saw it; the earliest is kept (one that is
  // stale by then only makes the loop look again and learn the right one).
  setHandler(awardPointsUpdate, async (req) => {
    adoptClock(req.clockNow);
    const r = await acts.recordAward({ ...ref, ...req });
    learnDue(r.nextDueAt);
    return { grant: r.grant, duplicate: r.duplicate };
  });
  setHandler(reversePointsUpdate, async (req) => {
    adoptClock(req.clockNow);
    const r = await acts.reversePoints({ ...ref, ...req });
    learnDue(r.nextDueAt);
    return r.entries;
  });
  setHandler(adjustPointsUpdate, async (req) => {
    adoptClock(req.clockNow);
    const r = await acts.adjustPoints({ ...ref, ...req });
    learnDue(r.nextDueAt);
    return r.entry;
  });
  setHandler(reevaluateTierUpdate, async (req) => {
    adoptClock(req.clockNow);
    const r = await acts.reevaluateTier({ ...ref, at: req.at });
    learnDue(r.nextDueAt);
    return r.change;
  });
  // Timed work runs one batch at a time (the main loop and clock advances share the lock).
  setExclusiveUpdateHandler(lock, advanceClockUpdate, {
    handle: async ({ now: to }) => {
      adoptClock(to);
      // Started by this very advance: learn what is due first.
      if (nextDue === null) nextDue = (await acts.nextDue(ref)).nextDueAt;
      await runDue();
      return progress();
    },
  });

  for (;;) {
    if (continueAsNewDue()) {
      await continueAsNewWhenSuggested<typeof loyaltyWorkflow>({
        unfinishedHandlers: 'wait', args: () => [{ ...ref, clockNow, nextDueAt: nextDue }],
      });
    }
    woken = false;
    let timeout: number | undefined;
    if (nextDue !== null && now() >= nextDue) {
      await lock.runExclusive(runDue);
      if (nextDue !== null && now() >= nextDue) timeout = RETRY_DUE_MS;
    }
    if (timeout === undefined && clockNow === null && nextDue !== null) timeout = Math.max(nextDue - Date.now(), 1);
    if (woken) continue;
    if (timeout === undefined) await condition(() => woken || continueAsNewDue());
    else await condition(() => woken || continueAsNewDue(), timeout);
  }
}
