import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkflowBundle } from '../../worker/worker.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { withTestWorkers } from '../support/test-workers.ts';
import { revealSignal, seenQuery, type SeenState } from '../support/workflows/globals.ts';

/**
 * The workflows of a workflow thread share one V8 context (the SDK's reusable context), whose global
 * object is an ordinary one (worker/workflow-thread.ts): each workflow still sees only its own
 * globals and its own module instances while they run interleaved.
 */
let platform: TestPlatform;
let code: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  code = (await buildWorkflowBundle([new URL('../support/workflows/globals.ts', import.meta.url)])).code;
});
afterAll(() => platform?.close());

describe('workflows sharing a thread', () => {
  it('keep their own globals and module state', async () => {
    await withTestWorkers(platform, code, 'globals', { TEMPORAL_WORKFLOW_THREADS: 1 }, async (taskQueue) => {
      const start = (value: string) => platform.temporal.client.workflow.start('globalsWriterWorkflow', {
        taskQueue, workflowId: `globals-${value}-${Date.now()}`, args: [value], workflowExecutionTimeout: '1 minute',
      });
      const [a, b] = [await start('a'), await start('b')];
      // Both have run their first task (a query waits for it) and wait, in the same thread.
      expect(await a.query<SeenState>(seenQuery)).toEqual({ global: 'a', module: 'a' });
      expect(await b.query<SeenState>(seenQuery)).toEqual({ global: 'b', module: 'b' });

      const reader = await platform.temporal.client.workflow.execute('globalsReaderWorkflow', {
        taskQueue, workflowId: `globals-reader-${Date.now()}`, workflowExecutionTimeout: '1 minute',
      });
      expect(reader).toEqual({ global: null, module: null });

      await Promise.all([a.signal(revealSignal), b.signal(revealSignal)]);
      expect(await a.result()).toEqual({ global: 'a', module: 'a' });
      expect(await b.result()).toEqual({ global: 'b', module: 'b' });
    });
  });
});
