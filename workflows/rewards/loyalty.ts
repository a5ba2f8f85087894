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
 * Awards, reversals, adjustments and tier re-evaluations arrive as updates and run one at a time
 * (their activity answers with the next due time). On a sandbox program's test clock the
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
  const setDue = (due: number | null) => {
    nextDue = due;
    woken = true;
  };
  const progress = (): LoyaltyProgress => ({ clockNow, nextDueAt: nextDue, processed, caughtUpTo });
  /** Everything due up to now, in batches; stops when nothing more is due. */
  const runDue = async () => {
    const t = now();
    while (nextDue !== null && nextDue <= t) {
      const r = await acts.processDue({ ...ref, now: t });
      processed += r.processed;
      nextDue = r.nextDueAt;
      if (r.processed === 0) break;
    }
    caughtUpTo = t;
  };

  setHandler(loyaltyProgressQuery, progress);
  setExclusiveUpdateHandler(lock, awardPointsUpdate, {
    handle: async (req) => {
      adoptClock(req.clockNow);
      const r = await acts.recordAward({ ...ref, ...req });
      setDue(r.nextDueAt);
      return { grant: r.grant, duplicate: r.duplicate };
    },
  });
  setExclusiveUpdateHandler(lock, reversePointsUpdate, {
    handle: async (req) => {
      adoptClock(req.clockNow);
      const r = await acts.reversePoints({ ...ref, ...req });
      setDue(r.nextDueAt);
      return r.entries;
    },
  });
  setExclusiveUpdateHandler(lock, adjustPointsUpdate, {
    handle: async (req) => {
      adoptClock(req.clockNow);
      const r = await acts.adjustPoints({ ...ref, ...req });
      setDue(r.nextDueAt);
      return r.entry;
    },
  });
  setExclusiveUpdateHandler(lock, reevaluateTierUpdate, {
    handle: async (req) => {
      adoptClock(req.clockNow);
      const r = await acts.reevaluateTier({ ...ref, at: req.at });
      setDue(r.nextDueAt);
      return r.change;
    },
  });
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
