import { condition, defineSignal, setHandler } from '@temporalio/workflow';

/** Ends the wait of `waitingWorkflow` and `waitingOnBothWorkflow`. */
export const releaseSignal = defineSignal('release');

/**
 * Test-only workflow code (never in production's bundle): a workflow that waits on a condition
 * until it is signalled, so its stack trace shows where it waits
 * (test/workflows/stack-traces.test.ts).
 */
export async function waitingWorkflow(): Promise<string> {
  let released = false;
  setHandler(releaseSignal, () => void (released = true));
  await condition(() => released);
  return 'released';
}

/** The same, waiting on two conditions at once through `Promise.all` (the SDK links an aggregate's inner promises to it). */
export async function waitingOnBothWorkflow(): Promise<string> {
  let released = false;
  setHandler(releaseSignal, () => void (released = true));
  await Promise.all([condition(() => released), condition(() => released)]);
  return 'released';
}
