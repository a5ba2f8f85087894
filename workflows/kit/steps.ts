/**
 * A workflow's database steps, with its first write run as a local activity (docs/adding-an-area.md
 * §4): inside the workflow's first task, so the update-with-start that created the resource is
 * answered when that task completes, not after an activity's round trip through the server and a
 * second task. Only for a short, idempotent write (a second run finds the row): a worker lost
 * mid-way then costs a workflow-task timeout, after which the next worker writes again. Pure:
 * workflows import it.
 */
import { patched, proxyActivities, proxyLocalActivities, type ActivityOptions } from '@temporalio/workflow';

/** What both kinds of activity take: timeouts and retries (no heartbeat, no task queue). */
type StepOptions = Pick<ActivityOptions, 'startToCloseTimeout' | 'scheduleToCloseTimeout' | 'retry'>;

/**
 * `steps`: the activities, run by the server as usual. `firstWrite()`: the same activities, run
 * locally — except while replaying a history from before the change, which scheduled an activity:
 * `since` is the change's patch id, and `firstWrite()` must be called where the first write was.
 */
export function stepsWithLocalFirstWrite<A extends object>(options: StepOptions, since: string): { steps: A; firstWrite: () => A } {
  const steps = proxyActivities<A>(options) as A;
  const local = proxyLocalActivities<A>(options) as A;
  return { steps, firstWrite: () => (patched(since) ? local : steps) };
}
