/**
 * The workflow threads' promise hook, which records where each workflow promise was made for the
 * Temporal UI's Stack Trace tab (the `__stack_trace` and `__enhanced_stack_trace` queries): the
 * SDK's own (`GlobalHandlers.setPromiseHook` in @temporalio/worker/lib/workflow/vm-shared.js), with
 * the stack formatted when a query asks for it instead of when the promise is made.
 *
 * Why: the SDK formats every workflow promise's stack at its creation — each frame looked up in the
 * bundle's source map, named, joined and matched against several regular expressions — although
 * the stacks are only read by the query, and almost every promise settles (and drops its stack)
 * long before anyone asks. That was about 16 % of the workflow thread's CPU under the payments
 * bench (docs/benchmarks.md, "The workflow thread"). Here the hook keeps V8's call sites of the
 * promise's creation (taken without formatting) and formats them, exactly as the SDK does, on
 * first read; the only thing it needs at creation is whether the promise is one of the inner
 * promises of `Promise.all`/`race`/`allSettled`/`any`, which the SDK links to the aggregate, and
 * that needs the names of the top two frames only. What the queries answer is the same as with
 * the SDK's hook (test/workflows/stack-traces.test.ts).
 *
 * Relies on SDK internals, like worker/workflow-thread.ts (`@temporalio/worker` is pinned).
 */
import v8 from 'node:v8';
import { cutoffStackTrace } from '@temporalio/common/lib/converter/failure-converter.js';
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared.js';
/** One frame of a structured stack (the enhanced query's `locations`). */
import type { StackTraceFileLocation as FileLocation } from '@temporalio/workflow';

interface Stack {
  readonly formatted: string;
  readonly structured: FileLocation[];
}

/** The workflow's store the queries read (`Activator.promiseStackStore` in @temporalio/workflow). */
interface PromiseStackStore {
  promiseToStack: Map<Promise<unknown>, Stack>;
  childToParent: Map<Promise<unknown>, Set<Promise<unknown>>>;
}

interface SourceMapConsumer {
  originalPositionFor(at: { line: number; column: number }): { source: string | null; line: number | null; column: number | null; name: string | null };
}

/** The parts of the SDK's `GlobalHandlers` this hook takes over or uses. */
interface SdkGlobalHandlers {
  bundleFilenameToSourceMapConsumer: Map<string, SourceMapConsumer>;
  stopPromiseHook: () => void;
  promiseHookInstalled: boolean;
  setPromiseHook(): void;
}

/** What the hook needs of a workflow context, looked up once per context (its `Function`). */
interface Realm {
  activator: () => { promiseStackStore: PromiseStackStore } | undefined;
  ErrorCtor: ErrorConstructor;
}

const handlers = globalHandlers as unknown as SdkGlobalHandlers;

/** The SDK's `formatCallsiteName`. */
function callsiteName(callsite: NodeJS.CallSite): string | null {
  const typeName = callsite.getTypeName();
  const methodName = callsite.getMethodName();
  const functionName = callsite.getFunctionName();
  return typeName && methodName ? `${typeName}.${methodName}` : callsite.isConstructor() && functionName ? `new ${functionName}` : functionName;
}

/** Where the SDK's `cutoffStructuredStackTrace` ends a structured stack: at the SDK's own entry frames. */
function isCutoff({ function_name, file_path }: FileLocation): boolean {
  return Boolean(function_name && file_path
    && ((/^Activator\.\S+NextHandler$/.test(function_name) && /.*[\\/]workflow[\\/](?:src|lib)[\\/]internals\.[jt]s$/.test(file_path))
      || (/Script\.runInContext/.test(function_name) && /^node:vm|vm\.js$/.test(file_path))));
}

/**
 * A promise's creation stack: V8's call sites, formatted as the SDK's `prepareStackTrace` does on
 * first read. Until then the call sites keep their frames' functions and receivers reachable (the
 * SDK's hook kept strings instead): the workflow's own code and objects, which its pending promise
 * keeps anyway, and which go with the promise when it settles or with the workflow when it leaves
 * the cache.
 */
class LazyStack implements Stack {
  #callsites: NodeJS.CallSite[] | undefined;
  #formatted = '';
  #structured: FileLocation[] = [];

  constructor(callsites: NodeJS.CallSite[]) {
    this.#callsites = callsites;
  }

  get formatted(): string {
    this.#format();
    return this.#formatted;
  }

  get structured(): FileLocation[] {
    this.#format();
    return this.#structured;
  }

  #format(): void {
    const callsites = this.#callsites;
    if (!callsites) return;
    this.#callsites = undefined;
    const lines = callsites.map((callsite) => {
      const line = callsite.getLineNumber();
      const column = callsite.getColumnNumber();
      const filename = callsite.getFileName();
      const sourceMap = filename ? handlers.bundleFilenameToSourceMapConsumer.get(filename) : undefined;
      if (sourceMap && line && column) {
        const pos = sourceMap.originalPositionFor({ line, column });
        const name = pos.name || callsiteName(callsite);
        this.#structured.push({
          file_path: pos.source ?? undefined, function_name: name ?? undefined, line: pos.line ?? undefined, column: pos.column ?? undefined, internal_code: false,
        });
        return name ? `    at ${name} (${pos.source}:${pos.line}:${pos.column})` : `    at ${pos.source}:${pos.line}:${pos.column}`;
      }
      const name = callsiteName(callsite);
      this.#structured.push({
        file_path: filename ?? undefined, function_name: name ?? undefined, line: line ?? undefined, column: column ?? undefined, internal_code: false,
      });
      return `    at ${String(callsite)}`;
    });
    const cut = this.#structured.findIndex(isCutoff);
    if (cut > -1) this.#structured.splice(cut);
    this.#formatted = cutoffStackTrace(lines.join('\n'));
  }
}

/** `Promise.then (<anonymous>)`, the first frame of an aggregate's inner promise. */
const isThen = (callsite: NodeJS.CallSite | undefined) => callsite !== undefined && !callsite.getFileName() && String(callsite) === 'Promise.then (<anonymous>)';
/** `Promise.all (<anonymous>)` and its kin (`Function.` on older V8s). */
const isAggregate = (callsite: NodeJS.CallSite | undefined) => callsite !== undefined && !callsite.getFileName()
  && /^(Function|Promise)\.(race|all|allSettled|any) \(<anonymous>\)$/.test(String(callsite));

/**
 * Installs the hook in place of the SDK's (`GlobalHandlers.install` calls `setPromiseHook` once per
 * thread, after it set its `Error.prepareStackTrace`).
 */
export function installLazyPromiseStacks(): void {
  handlers.setPromiseHook = function setLazyPromiseHook(this: SdkGlobalHandlers) {
    const realms = new WeakMap<object, Realm>();
    const realmOf = (promise: Promise<unknown>): Realm => {
      // The workflow context's own `Function` (unique per V8 context), as the SDK's `getActivator` finds it.
      const ctor = promise.constructor.constructor as FunctionConstructor;
      let realm = realms.get(ctor);
      if (!realm) {
        realm = {
          activator: ctor('return globalThis.__TEMPORAL_ACTIVATOR__') as Realm['activator'],
          ErrorCtor: ctor('return globalThis.Error')() as ErrorConstructor,
        };
        realms.set(ctor, realm);
      }
      return realm;
    };

    // The call sites of an error made while `raw` is set come back as they are, unformatted; every
    // other stack is the SDK's (`install` set its `prepareStackTrace` just before).
    const sdkPrepare = Error.prepareStackTrace!;
    let raw = false;
    Error.prepareStackTrace = (err, callsites) => (raw ? callsites : sdkPrepare(err, callsites));

    // Tracks `Promise.all` and its kin, to link the promises they make inside to the aggregate.
    let currentAggregation: Promise<unknown> | undefined;
    try {
      this.stopPromiseHook = (v8.promiseHooks.createHook as (hooks: v8.HookCallbacks) => () => void)({
        init(created, parent) {
          const realm = realmOf(created);
          const store = realm.activator()?.promiseStackStore;
          if (!store) return;
          // Taken here, not in a helper, so that the stack starts with this frame, as the SDK's does.
          raw = true;
          let callsites: unknown;
          try {
            callsites = (new realm.ErrorCtor() as { stack?: unknown }).stack;
          } finally {
            raw = false;
          }
          if (!Array.isArray(callsites)) return;
          // This hook's own frame, and Node's promise-hook dispatcher when it shows.
          let skip = 1;
          const second = (callsites as NodeJS.CallSite[])[1];
          if (second?.getFunctionName() === 'initAll' && second.getFileName() === 'node:internal/promise_hooks') skip = 2;
          const sites = (callsites as NodeJS.CallSite[]).slice(skip);
          let promise = created;
          let stack: Stack = new LazyStack(sites);
          if (currentAggregation && isThen(sites[0]) && isAggregate(sites[1]) && sites.length > 2) {
            // An aggregate's inner promise: linked directly to the aggregate, with its stack.
            promise = currentAggregation;
            stack = store.promiseToStack.get(currentAggregation)!;
          } else if (isAggregate(sites[0]) && sites.length > 1) {
            currentAggregation = created;
          } else {
            currentAggregation = undefined;
          }
          if (promise === parent) return;
          store.promiseToStack.set(promise, stack);
          const parents = store.childToParent.get(promise) ?? new Set();
          if (parent !== undefined) parents.add(parent);
          store.childToParent.set(promise, parents);
        },
        settled(promise) {
          const store = realmOf(promise).activator()?.promiseStackStore;
          if (!store) return;
          store.childToParent.delete(promise);
          store.promiseToStack.delete(promise);
        },
      });
      this.promiseHookInstalled = true;
    } catch {
      // v8.promiseHooks is there on every Node this project supports; without it, no stack traces (as the SDK).
    }
  };
}
