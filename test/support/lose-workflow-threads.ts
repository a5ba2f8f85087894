/**
 * Preloaded (`node --import`) into a production entry point by test/workflows/worker-exit.test.ts:
 * keeps the workflow threads the process starts (worker/worker.ts names them `bp-workflow-<n>`)
 * and terminates them when a line arrives on stdin, as a crash in one would end it. The process
 * itself is left to notice.
 */
import { syncBuiltinESMExports } from 'node:module';
import threads from 'node:worker_threads';

const workflowThreads: threads.Worker[] = [];
const NodeWorker = threads.Worker;
threads.Worker = class extends NodeWorker {
  constructor(...args: ConstructorParameters<typeof NodeWorker>) {
    super(...args);
    if (args[1]?.name?.startsWith('bp-workflow-')) workflowThreads.push(this);
  }
};
// The application imports `{ Worker } from 'node:worker_threads'`: its binding follows the change.
syncBuiltinESMExports();
process.stdin.once('data', () => {
  for (const thread of workflowThreads) void thread.terminate();
  process.stdout.write(`${JSON.stringify({ terminated: workflowThreads.length })}\n`);
});
