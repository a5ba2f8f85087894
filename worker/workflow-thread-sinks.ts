/**
 * A workflow activation's sink calls (the workflow's log lines, its trace spans) travel back with the
 * activation's completion from the workflow thread, instead of in a request of their own.
 *
 * Why: after every activation the SDK's worker asks the thread for the calls the activation made
 * (`extract-sink-calls`): one more message each way between the main thread and the workflow thread,
 * each a wake-up of the other thread (about 70 µs of the main thread's time per message measured
 * under the payments probe), for what the thread already has when it answers the activation. Here
 * the thread (worker/workflow-thread.ts) puts them on the completion it answers, prepared as the SDK
 * prepares them for that request, and the main thread's proxy of the workflow (the SDK's
 * `VMWorkflowThreadProxy`) takes them off and hands them out when the worker asks for them. A
 * completion without them (an activation that failed in the thread) leaves the worker's request to
 * the SDK's own path. Relies on SDK internals, like the threads themselves (`@temporalio/worker` is
 * pinned); test/platform/observability.test.ts sees a workflow's spans, which come through sinks.
 */
import type { SinkCall } from '@temporalio/workflow';

/** The completion's extra field (not part of the protobuf message, so never encoded to the core). */
const SINK_CALLS = '__bpSinkCalls';

type WithSinkCalls<C> = C & { [SINK_CALLS]?: SinkCall[] };

/**
 * In the workflow thread: the completion, carrying the activation's sink calls, prepared as the SDK's
 * thread prepares them for `extract-sink-calls` (the workflow info copied, without its functions).
 */
export function withSinkCalls<C extends object>(completion: C, calls: SinkCall[]): WithSinkCalls<C> {
  for (const call of calls) {
    // Functions cannot cross to the main thread; its proxy puts equivalents back.
    const { now: _now, random: _random, ...unsafe } = call.workflowInfo.unsafe;
    call.workflowInfo = structuredClone({ ...call.workflowInfo, unsafe: unsafe as SinkCall['workflowInfo']['unsafe'] });
  }
  return Object.assign(completion, { [SINK_CALLS]: calls });
}

interface ThreadProxy {
  activate(activation: unknown): Promise<object>;
  getAndResetSinkCalls(): Promise<SinkCall[]>;
}

let received = false;

/**
 * On the main thread: the SDK's proxy of a threaded workflow takes the sink calls off each completion
 * and answers the worker's next request for them from there (restoring the workflow info's
 * functions, as the SDK's proxy does). Once per process. The proxy class and the random source come
 * from the caller so that the workflow thread, which imports this module too, loads neither.
 */
export function receiveSinkCallsWithCompletions(proxy: { prototype: ThreadProxy }, randomSource: (random: () => number) => unknown): void {
  if (received) return;
  received = true;
  const pending = new WeakMap<ThreadProxy, SinkCall[]>();
  const activate = proxy.prototype.activate;
  const getAndResetSinkCalls = proxy.prototype.getAndResetSinkCalls;
  proxy.prototype.activate = async function (this: ThreadProxy, activation: unknown) {
    const completion = (await activate.call(this, activation)) as WithSinkCalls<object>;
    const calls = completion[SINK_CALLS];
    if (calls) {
      delete completion[SINK_CALLS];
      pending.set(this, calls);
    }
    return completion;
  };
  proxy.prototype.getAndResetSinkCalls = async function (this: ThreadProxy) {
    const calls = pending.get(this);
    if (!calls) return getAndResetSinkCalls.call(this);
    pending.delete(this);
    for (const call of calls) Object.assign(call.workflowInfo.unsafe, { now: Date.now, random: randomSource(Math.random) });
    return calls;
  };
}
