import { ActivityFailure, ApplicationFailure, allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { WarehouseActivities } from '../../activities/warehouses/index.ts';
import { Mutex, setExclusiveUpdateHandler } from '../kit/entity.ts';
import { Deadline } from './deadline.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  DB_STEPS, advanceCycleCountClockUpdate, approveCycleCountUpdate, closeCycleCountUpdate, cycleCountCreatedUpdate, cycleCountStateQuery, recordCountsUpdate,
  type CycleCountDraft, type CycleCountState, type CycleCountView,
} from './shared.ts';

const acts = proxyActivities<WarehouseActivities>(DB_STEPS);
const TERMINAL = new Set<CycleCountState['status']>(['completed', 'cancelled']);

/**
 * One cycle count (`cycle-count-cc_…`). Its first activity freezes the expected quantities (the
 * `cycleCountCreated` update answers with the count). Counts arrive line by line (`recordCounts`,
 * validated: the count is open, every SKU is on it); once every line is counted the variances are
 * posted, or the count waits for `approveCycleCount` when one exceeds the tolerance. Operations can
 * force-close or abort it (`closeCycleCount`). When the deadline passes unfinished,
 * `cycle_count.overdue` is recorded once and the count goes on (the deadline is on the count's test
 * clock in the sandbox when it was created with one: see Deadline).
 */
export async function cycleCountWorkflow(draft: CycleCountDraft): Promise<CycleCountState> {
  const ref = { countId: draft.countId, accountId: draft.accountId, livemode: draft.livemode };
  const state: CycleCountState = { status: 'creating', skus: [], counted: 0, overdue: false };
  const mutex = new Mutex();
  let created: CycleCountView | undefined;
  let rejected: ApplicationFailure | undefined;

  const apply = (v: CycleCountView): CycleCountView => {
    state.status = v.status;
    state.skus = v.lines.map((l) => l.sku);
    state.counted = v.progress.counted;
    state.overdue = v.overdue;
    recordStatus(v.status);
    return v;
  };
  const mustBe = (allowed: CycleCountState['status'][], action: string) => {
    if (!allowed.includes(state.status)) throw refuse(REFUSALS.invalidTransition, `a ${state.status} cycle count cannot ${action}`, { current_state: state.status });
  };

  const deadline = new Deadline(draft.testClockStart);
  const done = () => TERMINAL.has(state.status);
  setHandler(advanceCycleCountClockUpdate, (req) => deadline.advance(req.to, done), {
    validator: (req) => deadline.validateAdvance(req.to, state.status, created !== undefined),
  });
  setHandler(cycleCountStateQuery, () => ({ ...state, skus: [...state.skus] }));
  setHandler(cycleCountCreatedUpdate, async () => {
    await condition(() => created !== undefined || rejected !== undefined);
    if (rejected) throw rejected;
    return created!;
  });
  setExclusiveUpdateHandler(mutex, recordCountsUpdate, {
    validate: (input) => {
      mustBe(['counting'], 'take counts');
      const on = new Set(state.skus);
      const seen = new Set<string>();
      const errors: { path: string; message: string }[] = [];
      input.counts.forEach((c, i) => {
        if (!on.has(c.sku)) errors.push({ path: `counts.${i}.sku`, message: `'${c.sku}' is not on this cycle count` });
        else if (seen.has(c.sku)) errors.push({ path: `counts.${i}.sku`, message: `'${c.sku}' is counted twice in this request` });
        seen.add(c.sku);
      });
      if (errors.length) throw refuse(REFUSALS.validationFailed, errors.map((e) => e.message).join('; '), { errors });
    },
    handle: async (input) => apply(await acts.recordCycleCounts({ ...ref, ...input })),
  });
  setExclusiveUpdateHandler(mutex, approveCycleCountUpdate, {
    validate: () => mustBe(['pending_approval'], 'be approved'),
    handle: async (input) => apply(await acts.approveCycleCount({ ...ref, ...input })),
  });
  setExclusiveUpdateHandler(mutex, closeCycleCountUpdate, {
    validate: () => mustBe(['counting', 'pending_approval'], 'be closed'),
    handle: async (input) => apply(await acts.closeCycleCount({ ...ref, ...input })),
  });

  try {
    created = apply(await acts.createCycleCount(draft));
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    rejected = cause instanceof ApplicationFailure ? cause : refuse(REFUSALS.rejected, 'The cycle count could not be started.');
    await condition(allHandlersFinished);
    throw rejected;
  }

  if (!created.overdue && await deadline.passed(Date.parse(draft.deadline), done)) {
    await mutex.runExclusive(async () => {
      if (!done()) apply(await acts.markCycleCountOverdue(ref));
    });
  }
  deadline.settle();
  await condition(done);
  await condition(allHandlersFinished);
  return state;
}
