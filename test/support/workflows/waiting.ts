import { condition, defineSignal, setHandler } from '@temporalio/workflow';

/** Ends the wait of `waitingWorkflow`. */
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
