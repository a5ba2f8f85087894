import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

const WORKER_MAIN = fileURLToPath(new URL('../../worker/main.ts', import.meta.url));
const LOSE_THREADS = fileURLToPath(new URL('../support/lose-workflow-threads.ts', import.meta.url));

let platform: TestPlatform;
const children: ChildProcess[] = [];
beforeAll(async () => {
  platform = await startTestPlatform(); // no worker in this process: the one under test is the child
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await platform?.close();
});

/** The production worker entry point on this file's database and task queues, resolved once it is ready (polling, its signals handled). */
async function workerMain(): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['--import', LOSE_THREADS, WORKER_MAIN], {
    env: {
      ...process.env, DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: platform.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: platform.taskQueuePrefix,
      WORKFLOW_BUNDLE_PATH: inject('bundlePath'), LOG_LEVEL: 'info',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => output.includes('"msg":"worker ready"') && (clearInterval(poll), resolve()), 50);
    child.once('exit', (code, signal) => (clearInterval(poll), reject(new Error(`worker exited (${code ?? signal}) before it was ready:\n${output}`))));
  });
  return { child, output: () => output };
}

const exited = async (child: ChildProcess) => {
  const [code, signal] = await once(child, 'exit') as [number | null, NodeJS.Signals | null];
  return { code, signal };
};

describe('a worker process whose workers stop on their own (worker/main.ts)', () => {
  it('stops in order and exits 1 when its workflow threads are lost, so that its supervisor starts another', async () => {
    const { child, output } = await workerMain();
    const exit = exited(child);
    child.stdin!.write('go\n');
    await expect.poll(output).toContain('{"terminated":1}');
    // The next workflow task reaches a thread that is gone: the area's worker fails, and with it the process.
    await platform.temporal.client.workflow.start('housekeepingWorkflow', {
      taskQueue: platform.temporal.taskQueue('platform'), workflowId: `lost-thread-${Date.now()}`, args: [{}],
    });
    expect(await exit).toEqual({ code: 1, signal: null });
    expect(output()).toContain('workers stopped: shutting down');
    // The SDK's error, either way the thread's end reached it (a request pending, or the next one).
    expect(output()).toMatch(/UnexpectedError: [^\n]*worker thread exited/i);
    expect(output()).not.toContain('shutdown failed');
  }, 120_000);

  it('exits 0 on SIGTERM, its workers stopped by the shutdown and not reported as stopping on their own', async () => {
    const { child, output } = await workerMain();
    const exit = exited(child);
    child.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(output()).toContain('"msg":"shutting down"');
    expect(output()).not.toContain('workers stopped');
    expect(output()).not.toContain('shutdown failed');
  }, 120_000);
});
