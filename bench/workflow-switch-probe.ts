/**
 * `scripts/node24.sh node bench/workflow-switch-probe.ts`: what the SDK's reusable V8 context costs
 * per call into a workflow — the same workflow again, or another one (the SDK then swaps the
 * workflows' globals), and a workflow's creation and disposal — with the context's global object
 * contextified (Node's default, what the SDK asks for) and ordinary (`vm.constants.DONT_CONTEXTIFY`,
 * what worker/workflow-thread.ts gives it). Runs in this thread, on this checkout's workflow bundle;
 * µs per call, three rounds each. docs/benchmarks.md, "The workflow context's global object".
 */
import vm from 'node:vm';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm.js';
import type { WorkflowCreateOptions } from '@temporalio/worker/lib/workflow/interface.js';
import { buildWorkflowBundle } from '../worker/worker.ts';

const { code } = await buildWorkflowBundle();
const sourceMapAt = code.indexOf('base64,', code.lastIndexOf('//# sourceMappingURL=data:')) + 'base64,'.length;
const bundle = { code, sourceMap: JSON.parse(Buffer.from(code.slice(sourceMapAt).trimEnd(), 'base64').toString()), filename: '/tmp/workflow-bundle.js' };

const createContext = vm.createContext;
async function creator(ordinaryGlobal: boolean): Promise<ReusableVMWorkflowCreator> {
  if (ordinaryGlobal) vm.createContext = ((_object?: vm.Context, options?: vm.CreateContextOptions) => createContext(vm.constants.DONT_CONTEXTIFY, options)) as typeof vm.createContext;
  try {
    return await ReusableVMWorkflowCreator.create(bundle as never, undefined as never, new Set(), undefined);
  } finally {
    vm.createContext = createContext;
  }
}

const options = (runId: string) => ({
  info: {
    workflowId: `probe-${runId}`, runId, workflowType: 'housekeepingWorkflow', searchAttributes: {}, taskQueue: 'probe', namespace: 'default',
    firstExecutionRunId: runId, originalExecutionRunId: runId, startTime: new Date(), runStartTime: new Date(), taskTimeoutMs: 10_000, attempt: 1,
    historyLength: 1, historySize: 0, continueAsNewSuggested: false, currentBuildId: '', unsafe: { now: Date.now, isReplaying: false, random: Math.random }, priority: {},
  },
  randomnessSeed: [1, 2, 3, 4, 5, 6, 7, 8], now: Date.now(), showStackTraceSources: false,
}) as unknown as WorkflowCreateOptions;

/** A workflow's cheapest call into the context (the SDK's condition check), through the SDK's own proxy. */
type Probed = { workflowModule: { tryUnblockConditions(): unknown }; dispose(): Promise<void> };
const N = 20_000;
for (const ordinaryGlobal of [false, true]) {
  const c = await creator(ordinaryGlobal);
  const workflows = (await Promise.all(['a', 'b', 'c', 'd'].map((id) => c.createWorkflow(options(`${ordinaryGlobal}-${id}`))))) as unknown as Probed[];
  for (let round = 0; round < 3; round++) {
    let t = performance.now();
    for (let i = 0; i < N; i++) workflows[0]!.workflowModule.tryUnblockConditions();
    const same = ((performance.now() - t) * 1000) / N;
    t = performance.now();
    for (let i = 0; i < N; i++) workflows[i % 4]!.workflowModule.tryUnblockConditions();
    const switching = ((performance.now() - t) * 1000) / N;
    t = performance.now();
    for (let i = 0; i < 2000; i++) await ((await c.createWorkflow(options(`${ordinaryGlobal}-${round}-${i}`))) as unknown as Probed).dispose();
    const createDispose = ((performance.now() - t) * 1000) / 2000;
    console.log(JSON.stringify({
      global: ordinaryGlobal ? 'ordinary (DONT_CONTEXTIFY)' : 'contextified', same_workflow_us: Math.round(same * 10) / 10,
      switching_us: Math.round(switching), create_and_dispose_us: Math.round(createDispose),
    }));
  }
  await c.destroy();
}
