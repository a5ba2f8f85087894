import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { withTestWorkers } from '../support/test-workers.ts';
import { releaseSignal } from '../support/workflows/waiting.ts';

/**
 * TEMPORAL_WORKFLOW_STACK_TRACES reaches the workflow threads (worker/workflow-thread.ts): by
 * default a waiting workflow answers the queries the Temporal UI sends (`__stack_trace`,
 * `__enhanced_stack_trace`) with where it waits, each frame mapped to its source line
 * (worker/workflow-stack-traces.ts formats the stack when the query asks); with false no promise
 * hook is installed and the query says stack traces are off.
 */
let platform: TestPlatform;
let code: string;

const source = new URL('../support/workflows/waiting.ts', import.meta.url);
/** The 1-based line of `text` in the test workflows' source. */
const lineOf = (text: string) => readFileSync(source, 'utf8').split('\n').findIndex((line) => line.includes(text)) + 1;

beforeAll(async () => {
  platform = await startTestPlatform();
  code = (await buildWorkflowBundle([source])).code;
});
afterAll(() => platform?.close());

interface Location { file_path?: string; function_name?: string; line?: number; column?: number }
interface Outcome { stack?: string; enhanced?: { stacks: { locations: Location[] }[] }; error?: string }

function queryWhileWaiting(stackTraces: boolean, name: string, workflowType = 'waitingWorkflow'): Promise<Outcome> {
  return withTestWorkers(platform, code, name, { TEMPORAL_WORKFLOW_STACK_TRACES: stackTraces }, async (taskQueue) => {
    const handle = await platform.temporal.client.workflow.start(workflowType, {
      taskQueue, workflowId: `waiting-${name}-${Date.now()}`, workflowExecutionTimeout: '1 minute',
    });
    let outcome: Outcome;
    try {
      outcome = { stack: await handle.query<string>('__stack_trace'), enhanced: await handle.query('__enhanced_stack_trace') };
    } catch (err) {
      outcome = { error: (err as Error).message };
    }
    await handle.signal(releaseSignal);
    expect(await handle.result()).toBe('released');
    return outcome;
  });
}

describe('workflow stack traces (TEMPORAL_WORKFLOW_STACK_TRACES)', () => {
  it('by default, a waiting workflow shows the source line where it waits, in both queries', async () => {
    const { stack, enhanced, error } = await queryWhileWaiting(true, 'on');
    expect(error).toBeUndefined();
    const line = lineOf('await condition(() => released);');
    expect(stack).toMatch(new RegExp(`^    at waitingWorkflow \\(.*waiting\\.ts:${line}:\\d+\\)$`, 'm'));
    // The SDK's own frames below the workflow function are cut off, as the SDK's hook cuts them.
    expect(stack).not.toMatch(/NextHandler|runInContext/);
    const frames = enhanced!.stacks.flatMap((s) => s.locations);
    expect(frames).toContainEqual(expect.objectContaining({ function_name: 'waitingWorkflow', line, file_path: expect.stringMatching(/waiting\.ts$/) }));
  });

  it('a wait on Promise.all is one stack, at the Promise.all', async () => {
    const { stack, enhanced, error } = await queryWhileWaiting(true, 'all', 'waitingOnBothWorkflow');
    expect(error).toBeUndefined();
    // The aggregate's inner promises (its `then`s) are linked to it, as the SDK's hook links them;
    // the source map names the frame after the call it points at (`all`).
    expect(stack).toMatch(new RegExp(`^    at all \\(.*waiting\\.ts:${lineOf('await Promise.all(')}:\\d+\\)$`));
    expect(enhanced!.stacks).toHaveLength(1);
  });

  it('with false, the query answers that stack traces are off, and the workflow runs as before', async () => {
    const { stack, error } = await queryWhileWaiting(false, 'off');
    expect(stack).toBeUndefined();
    expect(error).toContain('stack traces are not enabled');
  });
});
