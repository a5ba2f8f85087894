import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { Mutex, continueAsNewDue, continueAsNewWhenSuggested, setExclusiveUpdateHandler } from '../kit/entity.ts';
import {
  advanceClockSignal, awaitSubscriptionRecordedUpdate, cancelSubscriptionUpdate, changePlanUpdate, pauseSubscriptionUpdate,
  resumeSubscriptionUpdate, retryCollectionUpdate, subscriptionProgressQuery, updatePaymentMethodUpdate, type SubscriptionWorkflowInput,
} from './shared.ts';
import { Subscription } from './subscription-state.ts';

/**
 * One subscription for its whole life (`subscription-sub_…`): trial, billing periods, an invoice at
 * each period end (collected through the payment workflow as a child when auto collection is on),
 * dunning on the plan's schedule, pause/resume, plan changes and cancellation. The database row is
 * a read model only this workflow writes (its first activity creates it). Time is the test clock's
 * when the subscription has one (advanced by signal), else workflow time; the workflow waits on
 * conditions with timeouts so a pause or cancel is seen at once. It continues as new every
 * `cyclesPerRun` cycles, so a ten-year subscription keeps a bounded history.
 *
 * The state and its transitions live in `Subscription`; this function wires the messages to it
 * and runs the main loop. Updates that change the subscription run one at a time behind a lock
 * (validated on arrival and again under the lock); they do not wait for the main loop's billing
 * steps, which read the state as it is at each step.
 */
export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<void> {
  const sub = new Subscription(input);
  const lock = new Mutex();

  setHandler(subscriptionProgressQuery, () => sub.progress());
  setHandler(advanceClockSignal, ({ now }) => sub.advanceClock(now));
  setHandler(awaitSubscriptionRecordedUpdate, () => sub.recorded());
  setExclusiveUpdateHandler(lock, pauseSubscriptionUpdate, { validate: (req) => sub.validatePause(req), handle: (req) => sub.pause(req) });
  setExclusiveUpdateHandler(lock, resumeSubscriptionUpdate, { validate: (req) => sub.validateResume(req), handle: (req) => sub.resume(req) });
  setExclusiveUpdateHandler(lock, cancelSubscriptionUpdate, { validate: () => sub.validateCancel(), handle: (req) => sub.cancel(req) });
  setExclusiveUpdateHandler(lock, changePlanUpdate, { validate: (req) => sub.validateChangePlan(req), handle: (req) => sub.changePlan(req) });
  setExclusiveUpdateHandler(lock, updatePaymentMethodUpdate, {
    validate: () => sub.validateUpdatePaymentMethod(), handle: (req) => sub.updatePaymentMethod(req),
  });
  // One synchronous change, then a wait for the main loop: no lock (see Subscription.retryCollection).
  setHandler(retryCollectionUpdate, () => sub.retryCollection(), { validator: () => sub.validateRetryCollection() });

  await sub.open();
  while (!sub.ended) {
    // Checked between steps (also in the middle of a long clock advance). Its handlers can wait
    // on this loop (retryCollection), so while one runs the loop carries on and asks again at
    // its next step: the new run starts from the same state, with no update cut off.
    if (continueAsNewDue(sub.runIsFull)) {
      await continueAsNewWhenSuggested<typeof subscriptionWorkflow>({
        drain: () => sub.drain(), unfinishedHandlers: 'retry-later', stillWanted: () => !sub.ended, args: () => sub.continuedInput(),
      });
    }
    const next = sub.nextEventAt();
    if (sub.now() >= next) {
      await sub.runDue();
      continue;
    }
    await sub.waitUntil(next);
  }
  await sub.close();
  await condition(allHandlersFinished);
}
