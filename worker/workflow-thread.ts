/**
 * The script of the process's workflow threads (worker/worker.ts `startWorkflowThreads`): the SDK's
 * own (`@temporalio/worker/lib/workflow/workflow-worker-thread`), with the deadlock bound
 * (TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS) applied once per request from the main thread — create a
 * workflow, activate it, dispose of it — instead of once per call into the sandbox; and without the
 * SDK's promise hook when TEMPORAL_WORKFLOW_STACK_TRACES is false, and with a promise hook that
 * formats the stacks lazily when it is true (worker/workflow-stack-traces.ts); and with each
 * activation's sink calls sent back with its completion (worker/workflow-thread-sinks.ts).
 *
 * Why: the SDK passes the bound as `vm`'s `timeout` to every call into a workflow's context, about
 * six per activation (initialise, activate, unblock conditions until none is left, conclude, and at
 * creation and disposal), and Node enforces a `timeout` by starting and joining a watchdog thread
 * for each call (nodejs/node#47739): 120–170 µs of CPU each on a quiet machine, and a wait for the
 * scheduler on a busy one. Here one watchdog covers a whole request: the request runs inside a tiny
 * script run with the `timeout`, and the SDK's calls into the context run within it without their
 * own. A workflow task that computes past the bound is stopped by V8 exactly as before — the nested
 * calls are unwound by the termination, which only the outer call, whose watchdog fired, converts
 * into the `ERR_SCRIPT_EXECUTION_TIMEOUT` error — and an activation stopped that way answers what the
 * SDK's own catch answers, a failed completion (its message names the bound and the setting), so the
 * workflow task fails and the workflow is evicted and replayed as before. The bound now covers an
 * activation's calls together rather than each alone (a stricter bound on the same thing: how long
 * one workflow task may hold the thread). The creator's own construction (the bundle's preloading)
 * keeps the SDK's per-call bound. Tested in test/workflows/deadlock-timeout.test.ts; measured in
 * docs/benchmarks.md ("The workflow thread"). Relies on SDK internals, like the threads themselves
 * (`@temporalio/worker` is pinned).
 *
 * The workflows' V8 context has an ordinary global object (`vm.constants.DONT_CONTEXTIFY`) instead
 * of Node's contextified one, whose every global property access goes through C++ interceptors. The
 * SDK's reusable context swaps each workflow's globals in and out whenever the thread turns from one
 * workflow to another — it reads every global's descriptor and compares and redefines them — which
 * under concurrent workflows is nearly every request: 150–200 µs a switch with interceptors, about
 * 80 µs without (docs/benchmarks.md, "The workflow thread, ninth session").
 */
import vm from 'node:vm';
import { workerData } from 'node:worker_threads';
import type { WorkflowCreateOptions } from '@temporalio/worker/lib/workflow/interface.js';
import { ReusableVMWorkflow, ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm.js';
import { VMWorkflow, VMWorkflowCreator } from '@temporalio/worker/lib/workflow/vm.js';
import { BaseVMWorkflow, globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared.js';
import type { coresdk } from '@temporalio/proto';
import { installLazyPromiseStacks } from './workflow-stack-traces.ts';
import { withSinkCalls } from './workflow-thread-sinks.ts';

/** The thread's settings, from worker/worker.ts (the SDK's `init` request carries its own). */
export interface WorkflowThreadData {
  /** TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS: the bound of one request; 0: none. */
  deadlockTimeoutMs: number;
  /** TEMPORAL_WORKFLOW_STACK_TRACES: false leaves out the SDK's promise hook (the UI's stack traces). */
  stackTraces: boolean;
}
const settings = workerData as WorkflowThreadData;
const boundMs = settings.deadlockTimeoutMs || undefined;

// Without stack traces the SDK installs no promise hook; its workflows are then told that stack
// traces are off (the `__stack_trace` query answers so), and nothing else changes. With them, the
// hook formats a promise's stack when a query reads it (worker/workflow-stack-traces.ts).
if (settings.stackTraces) installLazyPromiseStacks();
else (globalHandlers as unknown as { setPromiseHook(): void }).setPromiseHook = () => {};

// The SDK makes its workflows' contexts with `vm.createContext({}, { microtaskMode: 'afterEvaluate' })`
// (reusable-vm.js, vm.js) and uses the object it gets back from outside exactly as it uses it from
// inside, as the global object, which is what DONT_CONTEXTIFY makes it (Node ≥ 22.8).
const createContext = vm.createContext;
vm.createContext = ((contextObject?: vm.Context, options?: vm.CreateContextOptions) => createContext(
  isEmptyObject(contextObject) ? vm.constants.DONT_CONTEXTIFY : contextObject, options,
)) as typeof vm.createContext;

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && Reflect.ownKeys(value).length === 0;
}

const boundedCall = new vm.Script('__bpBoundedCall()', { filename: 'bp-workflow-deadlock-bound.js' });
let pending: (() => unknown) | undefined;
(globalThis as { __bpBoundedCall?: () => unknown }).__bpBoundedCall = () => pending!();

/** Runs `fn`'s synchronous part under one watchdog of `boundMs` (or none when off, or already inside one). */
function withinBound<T>(fn: () => T): T {
  if (boundMs === undefined || pending) return fn();
  pending = fn;
  try {
    return boundedCall.runInThisContext({ timeout: boundMs, displayErrors: false }) as T;
  } finally {
    pending = undefined;
  }
}

const isTimeout = (err: unknown) => (err as { code?: unknown } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';

for (const Creator of [ReusableVMWorkflowCreator, VMWorkflowCreator]) {
  const create = Creator.create.bind(Creator) as (...args: Parameters<typeof Creator.create>) => Promise<InstanceType<typeof Creator>>;
  Creator.create = (async (...args: Parameters<typeof Creator.create>) => {
    const creator = await create(...args);
    // The calls into the workflows' contexts carry no watchdog of their own from here on.
    (creator as unknown as { isolateExecutionTimeoutMs?: number }).isolateExecutionTimeoutMs = undefined;
    return creator;
  }) as typeof Creator.create;
  const createWorkflow = Creator.prototype.createWorkflow;
  Creator.prototype.createWorkflow = function (this: InstanceType<typeof Creator>, options: WorkflowCreateOptions) {
    return withinBound(() => createWorkflow.call(this, options));
  } as typeof createWorkflow;
}

const activate = BaseVMWorkflow.prototype.activate;
BaseVMWorkflow.prototype.activate = async function (this: BaseVMWorkflow, activation: coresdk.workflow_activation.IWorkflowActivation) {
  let completion: coresdk.workflow_completion.IWorkflowActivationCompletion;
  try {
    completion = await withinBound(() => activate.call(this, activation));
  } catch (err) {
    if (!isTimeout(err)) throw err;
    // What the SDK's activate answers when its own call times out (vm-shared.js), named for the
    // ops staff who read it in the Temporal UI.
    const deadlock = new Error(`Potential deadlock detected: the workflow task computed for more than ${boundMs} ms without yielding (TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS)`);
    completion = { runId: this.activator.info.runId, failed: { failure: this.activator.errorToFailure(deadlock) } };
  }
  // The activation's sink calls go back with it (worker/workflow-thread-sinks.ts).
  return withSinkCalls(completion, await this.getAndResetSinkCalls());
};

for (const Workflow of [ReusableVMWorkflow, VMWorkflow]) {
  const dispose = Workflow.prototype.dispose;
  Workflow.prototype.dispose = function (this: InstanceType<typeof Workflow>) {
    return withinBound(() => dispose.call(this));
  };
}

// The SDK's thread itself: it answers the main thread's requests with the classes patched above.
await import('@temporalio/worker/lib/workflow/workflow-worker-thread.js');
