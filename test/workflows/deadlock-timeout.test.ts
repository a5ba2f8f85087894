import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { withTestWorkers } from '../support/test-workers.ts';
import { spin } from '../support/workflows/spin.ts';

/**
 * TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS reaches the workflow sandbox: a workflow task that computes
 * longer than the timeout fails (the SDK's deadlock detection, with the configured bound, applied per
 * request to the workflow thread by worker/workflow-thread.ts), wherever in the activation the loop
 * runs, and the thread goes on serving other workflows; with 0 the same task runs to its end. The
 * spin is sized to about 1.5 s on this machine, five times the 300 ms bound.
 */
let platform: TestPlatform;
let code: string;
let iterations: number;

beforeAll(async () => {
  platform = await startTestPlatform();
  code = (await buildWorkflowBundle([new URL('../support/workflows/spin.ts', import.meta.url)])).code;
  // Rounds per 300 ms here, times five.
  let rounds = 1_000_000;
  for (let t0 = performance.now(); performance.now() - t0 < 300; rounds *= 2) spin(rounds);
  const started = performance.now();
  spin(rounds);
  iterations = Math.ceil((rounds * 1500) / Math.max(1, performance.now() - started));
});
afterAll(() => platform?.close());

function runSpin(deadlockTimeoutMs: number, name: string, { afterCondition = false, then }: { afterCondition?: boolean; then?: (taskQueue: string) => Promise<void> } = {}) {
  return withTestWorkers(platform, code, name, { TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS: deadlockTimeoutMs }, async (taskQueue) => {
    const handle = await platform.temporal.client.workflow.start('spinWorkflow', {
      taskQueue, workflowId: `spin-${name}-${Date.now()}`, args: [iterations, afterCondition],
    });
    // The first workflow task's outcome: completed (the workflow's result) or failed (its failure).
    for (;;) {
      const events = (await handle.fetchHistory()).events ?? [];
      const failed = events.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes;
      if (failed) {
        await handle.terminate('test done');
        await then?.(taskQueue);
        return { failure: failed.failure?.message ?? '' };
      }
      if (events.some((e) => e.workflowExecutionCompletedEventAttributes)) return { result: (await handle.result()) as number };
      await new Promise((r) => setTimeout(r, 100));
    }
  });
}

describe('the workflow deadlock timeout (TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS)', () => {
  it('fails a workflow task that computes past the bound, naming the bound', async () => {
    const outcome = await runSpin(300, 'bounded');
    expect(outcome).toEqual({ failure: expect.stringMatching(/Potential deadlock.*more than 300 ms.*TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS/) });
  });

  it('fails a task whose loop runs in a later call of the activation, and the thread serves the next workflow', async () => {
    let next: number | undefined;
    const outcome = await runSpin(300, 'later-call', {
      afterCondition: true,
      then: async (taskQueue) => {
        next = await platform.temporal.client.workflow.execute('spinWorkflow', {
          taskQueue, workflowId: `spin-next-${Date.now()}`, args: [1000, true], workflowExecutionTimeout: '30 seconds',
        });
      },
    });
    expect(outcome).toEqual({ failure: expect.stringMatching(/Potential deadlock.*more than 300 ms.*TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS/) });
    expect(next).toBe(spin(1000));
  });

  it('lets the same task run to its end with 0 (no bound)', async () => {
    const outcome = await runSpin(0, 'unbounded');
    expect(outcome).toEqual({ result: spin(iterations) });
  });
});
