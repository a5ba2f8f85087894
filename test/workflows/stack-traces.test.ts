import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { withTestWorkers } from '../support/test-workers.ts';
import { releaseSignal } from '../support/workflows/waiting.ts';

/**
 * TEMPORAL_WORKFLOW_STACK_TRACES reaches the workflow threads (worker/workflow-thread.ts): by
 * default a waiting workflow answers the `__stack_trace` query the Temporal UI sends with where it
 * waits; with false the SDK's promise hook is not installed and the query says stack traces are off.
 */
let platform: TestPlatform;
let code: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  code = (await buildWorkflowBundle([new URL('../support/workflows/waiting.ts', import.meta.url)])).code;
});
afterAll(() => platform?.close());

function stackTrace(stackTraces: boolean, name: string): Promise<{ stack?: string; error?: string }> {
  return withTestWorkers(platform, code, name, { TEMPORAL_WORKFLOW_STACK_TRACES: stackTraces }, async (taskQueue) => {
    const handle = await platform.temporal.client.workflow.start('waitingWorkflow', {
      taskQueue, workflowId: `waiting-${name}-${Date.now()}`, workflowExecutionTimeout: '1 minute',
    });
    let outcome: { stack?: string; error?: string };
    try {
      outcome = { stack: await handle.query<string>('__stack_trace') };
    } catch (err) {
      outcome = { error: (err as Error).message };
    }
    await handle.signal(releaseSignal);
    expect(await handle.result()).toBe('released');
    return outcome;
  });
}

describe('workflow stack traces (TEMPORAL_WORKFLOW_STACK_TRACES)', () => {
  it('by default, a waiting workflow shows where it waits', async () => {
    const { stack, error } = await stackTrace(true, 'on');
    expect(error).toBeUndefined();
    expect(stack).toMatch(/waitingWorkflow \(.*waiting\.ts:\d+:\d+\)/);
  });

  it('with false, the query answers that stack traces are off, and the workflow runs as before', async () => {
    const { stack, error } = await stackTrace(false, 'off');
    expect(stack).toBeUndefined();
    expect(error).toContain('stack traces are not enabled');
  });
});
