import {
  OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type ActivityInterceptorsFactory, type CompiledWorkerOptions, type WorkflowBundleOption } from '@temporalio/worker';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface.js';
import { ThreadedVMWorkflowCreator, VMWorkflowThreadProxy, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm.js';
import { createUnsafeRandomSource } from '@temporalio/workflow/lib/random-helpers.js';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input.js';
import type { Logger as SdkLogger } from '@temporalio/common';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker as NodeWorker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Client } from '@temporalio/client';
import { closeSenderConnections } from '../domain/webhooks/sender.ts';
import type { Config } from '../platform/config.ts';
import { startEventDispatchTrigger } from './event-dispatch.ts';
import { START_CONCURRENCY, dispatchPendingEvents } from '../domain/events/dispatch.ts';
import { limiter } from '../platform/concurrency.ts';
import { dispatchDepsOf } from '../activities/platform/events.ts';
import { activitiesOf, buildServices, customerMetrics, eventConsumers, workerAreas, workflowModules } from '../domain/registry.ts';
import { activityRefusals } from './activity-refusals.ts';
import { activityLogContext } from './log-context.ts';
import type { WorkflowThreadData } from './workflow-thread.ts';
import { receiveSinkCallsWithCompletions } from './workflow-thread-sinks.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger, type LogLevel, type Logger } from '../platform/logger.ts';
import { SdkLogAdapter } from './sdk-logger.ts';
import type { AreaServices } from '../platform/services.ts';
import { taskQueueName } from '../platform/temporal.ts';
import { clientInterceptors } from '../platform/temporal-interceptors.ts';
import { Resource } from '@opentelemetry/resources';
import { activeTelemetry, workflowSpanProcessor } from '../platform/telemetry.ts';
import { nativePool } from '../db/pool.ts';
import { observePool, observeWorkflowThreads } from '../platform/metrics.ts';

/** Where `npm run build` writes the prebuilt bundle that production workers load. */
export const PREBUILT_BUNDLE = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/** A workflows module's file: the `.ts` source, or its compiled `.js` under dist/. */
function modulePath(module: URL): string {
  const path = fileURLToPath(module);
  return existsSync(path) ? path : path.replace(/\.ts$/, '.js');
}

/**
 * Bundles every area's workflows (each descriptor's `workflows` module, plus `extraModules`, e.g. the
 * benchmark's empty workflow) into one workflow bundle. Two areas exporting the same workflow name
 * fail here rather than shadow each other. Tests and `npm run build` call this once; workers reuse
 * the result.
 *
 * The entry exports each workflow as a getter that requires its area's module on first read. Every
 * workflow run gets its own instance of the modules it imports (the SDK's reusable V8 context keeps
 * runs apart that way), and the SDK reads the entry at each run's start: an entry that imported
 * every area made each run instantiate all areas' workflow modules, a cost that grew with every
 * area added. Now a run instantiates its own area's modules only (docs/benchmarks.md, "The workflow
 * thread, ninth session").
 */
export async function buildWorkflowBundle(extraModules: readonly URL[] = []): Promise<{ code: string; workflowTypes: string[] }> {
  const owner = new Map<string, string>();
  const lines: string[] = [];
  for (const { area, module } of [...workflowModules, ...extraModules.map((module) => ({ area: 'extra', module }))]) {
    const path = modulePath(module);
    const names = Object.keys((await import(path)) as Record<string, unknown>);
    for (const name of names) {
      const other = owner.get(name);
      if (other) throw new Error(`workflow ${name} is exported by both the ${other} and the ${area} areas' workflows modules`);
      owner.set(name, area);
      // CommonJS (the entry is a .cjs file), so that webpack keeps the require inside the getter.
      lines.push(`Object.defineProperty(exports, ${JSON.stringify(name)}, { enumerable: true, get: () => require(${JSON.stringify(path)})[${JSON.stringify(name)}] });`);
    }
  }
  // The entry lives under node_modules/.cache so that webpack resolves packages from the project.
  // Its real path: webpack resolves symlinks (a symlinked node_modules) and must find the entry there.
  const cache = fileURLToPath(new URL('../node_modules/.cache/', import.meta.url));
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(realpathSync(cache), 'bp-workflows-')); // webpack resolves the real path
  try {
    const workflowsPath = join(dir, 'workflows.cjs');
    writeFileSync(workflowsPath, `${lines.join('\n')}\n`);
    const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: new DefaultLogger('WARN') });
    return { code, workflowTypes: [...owner.keys()] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The prebuilt bundle when there is one (production), else bundle from source (development). */
export function defaultBundle(): WorkflowBundleOption | undefined {
  return existsSync(PREBUILT_BUNDLE) ? { codePath: PREBUILT_BUNDLE } : undefined;
}

/**
 * Workflow interceptors in every bundle: a traced workflow and its activities continue the trace of
 * the request that started them (spans leave the sandbox through the `exporter` sink; see
 * startWorkers); an untraced one makes no workflow spans (workflows/kit/tracing.ts).
 */
const WORKFLOW_INTERCEPTOR_MODULES = [fileURLToPath(new URL('../workflows/kit/tracing.ts', import.meta.url))];

/** Each activity runs in a span of its workflow's trace (no-op spans when tracing is off). */
const activityTracing: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/** Every worker's activity interceptors: tracing, log context, and 4xx ApiErrors made non-retryable refusals. */
export const ACTIVITY_INTERCEPTORS = [activityTracing, activityLogContext, activityRefusals] as const;

/**
 * Finer buckets (milliseconds) for the SDK's latencies that say whether the workers keep up: its
 * defaults start at 100 ms, so a p99 of 20 ms read as 99 ms on the dashboard.
 */
const LATENCY_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000];
const SDK_LATENCY_BUCKETS = {
  workflow_task_schedule_to_start_latency: LATENCY_MS,
  activity_schedule_to_start_latency: LATENCY_MS,
  workflow_task_execution_latency: LATENCY_MS,
};

let runtimeInstalled = false;
/**
 * Where the SDK's log lines go: the logger of the workers started last in this process (one set in
 * production; in the tests, each file's in turn), else one of the runtime's own level.
 */
let sdkLogTarget: Logger | undefined;
let sdkFallbackLogger: Logger | undefined;

/** The SDK's runtime, once per process (its logger, and its metrics when a bind address is given). */
export function installRuntime(level: string, metricsBindAddress: string | undefined): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const fallbackLevel: LogLevel = level === 'debug' || level === 'info' || level === 'error' ? level : 'warn';
  Runtime.install({
    // The platform's JSON lines (worker/sdk-logger.ts), not the SDK's text on stderr.
    logger: new SdkLogAdapter(() => sdkLogTarget ?? (sdkFallbackLogger ??= createLogger(fallbackLevel, { service: 'temporal-sdk' }))),
    // No signal handlers of the SDK's own: by default it stops every worker on SIGINT, SIGTERM,
    // SIGQUIT and SIGUSR2 and leaves the process running, so a SIGUSR2 (a heap snapshot's usual
    // signal) left a live process whose workers polled nothing while its event dispatch went on.
    // The entry points stop in order on SIGINT and SIGTERM (platform/process.ts `onShutdown`); any
    // other signal has its usual effect on the whole process.
    shutdownSignals: [],
    // The SDK's own metrics (pollers, task slots, schedule-to-start latencies) for Prometheus.
    ...(metricsBindAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsBindAddress, histogramBucketOverrides: SDK_LATENCY_BUCKETS } } } } : {}),
  });
}

export interface WorkerOptions {
  address: string;
  namespace: string;
  taskQueuePrefix: string;
  orm: MikroORM;
  logger: Logger;
  logLevel?: string;
  /** A prebuilt bundle; without one, each start bundles from `WORKFLOWS_PATH`. */
  bundle?: WorkflowBundleOption;
  /** Settings for activities (webhook timeouts and retry schedule, …); default: loaded from the environment. */
  config?: Config;
  /** Replaces some of the areas' services (tests: a payment gateway they control). */
  services?: Partial<AreaServices>;
  /**
   * When given, the workers are created at once (connection open, workflow bundle loaded) but poll
   * only once this settles: a standby worker that can take over without its start-up time (tests).
   */
  startPolling?: Promise<unknown>;
  /** The areas whose task queues this process polls; default: every area with workflows or activities. */
  areas?: readonly string[];
  /**
   * How long a shutdown lets activities in flight finish (grace), then how long it waits for those
   * that ignore their cancellation (force); default 10 s and 30 s. Tests shorten both: what a file's
   * worker leaves unfinished goes with the file's database.
   */
  shutdownTimes?: { graceMs: number; forceMs: number };
}

export interface RunningWorkers {
  /** Resolves when every worker has stopped; rejects as soon as one fails (`shutdown` then stops the others). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * One worker per area that has workflows or activities, each on its area's task queue, sharing one
 * connection, one workflow bundle and one pool of workflow threads (TEMPORAL_WORKFLOW_THREADS). Each
 * worker polls only its area's queue, so an area can be scaled (more replicas) on its own.
 */
export async function startWorkers(opts: WorkerOptions): Promise<RunningWorkers> {
  const config = opts.config ?? loadConfig();
  sdkLogTarget = opts.logger;
  installRuntime(opts.logLevel ?? 'warn', config.TEMPORAL_METRICS_BIND_ADDRESS);
  const connection = await NativeConnection.connect({ address: opts.address });
  const bundle = opts.bundle ?? (config.WORKFLOW_BUNDLE_PATH ? { codePath: config.WORKFLOW_BUNDLE_PATH } : defaultBundle()) ?? (await buildWorkflowBundle());
  observePool('orm', await nativePool(opts.orm));
  // A client on the worker's own connection, for activities that start workflows (the event dispatcher).
  const client = new Client({ connection, namespace: opts.namespace, interceptors: clientInterceptors() });
  const workflowSpans = makeWorkflowExporter(workflowSpanProcessor(), activeTelemetry()?.resource ?? Resource.empty());
  const platform = { orm: opts.orm, config, logger: opts.logger };
  const deps = {
    ...platform,
    ...buildServices(platform, opts.services),
    temporal: client,
    taskQueue: (area: string) => taskQueueName(opts.taskQueuePrefix, area, config.TEMPORAL_TASK_QUEUES),
    eventConsumers,
    customerMetrics,
  };
  const areas = opts.areas ? workerAreas.filter((area) => opts.areas!.includes(area.name)) : workerAreas;
  // Per area: one worker on each area's queue. Single: one worker with every area's activities.
  const pollers = config.TEMPORAL_TASK_QUEUES === 'single'
    ? [{ queue: deps.taskQueue('all'), activities: mergeActivities(areas.map((area) => [area.name, activitiesOf(area, deps)] as const)) }]
    : areas.map((area) => ({ queue: deps.taskQueue(area.name), activities: activitiesOf(area, deps) }));
  const queues = pollers.map((p) => p.queue);
  // One bundle parse and one pool of workflow threads for all of them (not a thread each: ~60 MB per area).
  const WorkerClass = sharedWorkflowThreadsWorker({
    threads: config.TEMPORAL_WORKFLOW_THREADS,
    youngGenMb: config.TEMPORAL_WORKFLOW_THREAD_YOUNG_GEN_MB,
    activityNames: new Set(pollers.flatMap((p) => Object.keys(p.activities))),
    deadlockTimeoutMs: config.TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS,
    stackTraces: config.TEMPORAL_WORKFLOW_STACK_TRACES,
  });
  const workers = await Promise.all(
    pollers.map(({ queue, activities }) =>
      WorkerClass.create({
        connection,
        namespace: opts.namespace,
        taskQueue: queue,
        workflowBundle: bundle,
        activities,
        interceptors: { activity: [...ACTIVITY_INTERCEPTORS] },
        sinks: { exporter: workflowSpans },
        shutdownGraceTime: opts.shutdownTimes?.graceMs ?? '10s',
        // An activity that ignores its cancellation (one blocked on a call without a deadline) must
        // not hold a shutdown for ever: past this the worker stops anyway and the activity is retried
        // elsewhere after its timeout.
        shutdownForceTime: opts.shutdownTimes?.forceMs ?? '30s',
        stickyQueueScheduleToStartTimeout: config.TEMPORAL_STICKY_QUEUE_TIMEOUT_MS,
        maxCachedWorkflows: config.TEMPORAL_MAX_CACHED_WORKFLOWS,
        ...(config.TEMPORAL_POLLERS === 'autoscaling'
          ? { workflowTaskPollerBehavior: { type: 'autoscaling' as const }, activityTaskPollerBehavior: { type: 'autoscaling' as const } }
          : {}),
        maxConcurrentWorkflowTaskExecutions: Math.min(40, config.TEMPORAL_MAX_CACHED_WORKFLOWS),
      })),
  );
  if (opts.startPolling) await opts.startPolling;
  const runs = workers.map((w) => w.run());
  const done = Promise.all(runs).then(() => undefined);
  // Its failure is for whoever watches it (the entry points' exitWhenEnded), not an unhandled
  // rejection where nobody does (tests; a shutdown's own worker failing to finalize).
  done.catch(() => undefined);
  // A pass makes webhooks' first attempts: a worker lost in one is noticed like one lost in a
  // retry (its claim, or the sweeper activity's heartbeat, expires), but not sooner than 5 s (a pass
  // also plans and starts between renewals).
  const dispatchClaimMs = Math.max(5000, config.WEBHOOK_HEARTBEAT_TIMEOUT_MS);
  // One limit for the workflow starts of all this process's passes: a pass that has planned hands
  // its place to the next claim, and the starts of every such pass take their turns here.
  const dispatchStarts = limiter(START_CONCURRENCY);
  const eventDispatch = await startEventDispatchTrigger({
    orm: opts.orm, client, taskQueuePrefix: opts.taskQueuePrefix, taskQueue: deps.taskQueue('platform'), sweepMs: config.EVENT_DISPATCH_SWEEP_MS,
    workflowTaskTimeoutMs: config.EVENT_WORKFLOW_TASK_TIMEOUT_MS, logger: opts.logger,
    heartbeatTimeoutMs: dispatchClaimMs,
    passes: config.EVENT_DISPATCH_PASSES, batchSize: config.EVENT_DISPATCH_BATCH, waitingPasses: config.EVENT_DISPATCH_WAITING_PASSES,
    dispatch: (batchSize, planned) => dispatchPendingEvents(dispatchDepsOf(deps, { claimMs: dispatchClaimMs, startLimit: dispatchStarts, planned }), batchSize),
  });
  opts.logger.info('workers polling', { queues });
  let stopping: Promise<void> | null = null;
  return {
    done,
    shutdown() {
      stopping ??= (async () => {
        await eventDispatch.stop();
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        // Every worker, the failed one's siblings too, must have let go of the connection.
        await Promise.allSettled(runs);
        closeSenderConnections();
        await connection.close();
      })();
      return stopping;
    },
  };
}

interface WorkflowThreads {
  /** How many workflow threads the process runs (TEMPORAL_WORKFLOW_THREADS). */
  threads: number;
  /** Each thread's V8 young generation in MB (TEMPORAL_WORKFLOW_THREAD_YOUNG_GEN_MB); 0: V8's default. */
  youngGenMb: number;
  /** Every area's activity names: the threads check a workflow's local activities against them. */
  activityNames: ReadonlySet<string>;
  /** Bound of each call into workflow code (TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS); 0: unbounded. */
  deadlockTimeoutMs: number;
  /** Whether workflows keep their promises' stacks for the UI's stack trace (TEMPORAL_WORKFLOW_STACK_TRACES). */
  stackTraces: boolean;
}

/**
 * A Worker class whose instances (the area workers of one process) share one parsed workflow bundle
 * and one pool of workflow threads, instead of a bundle parse, a worker thread and a V8 context
 * each. Each worker runs only its own area's local activities (another area's fails on the worker).
 * Uses the SDK's protected static hooks `getOrCreateBundle` and `createWorkflowCreator`, and builds
 * the threads as the SDK's `ThreadedVMWorkflowCreator.create` does, with a young generation of our own
 * (@temporalio/worker is pinned): every worker the tests start runs through it, several areas in one
 * process in the worker-process tests (e.g. test/billing/worker-crash.test.ts). Measurements:
 * docs/benchmarks.md, target 5.
 */
function sharedWorkflowThreadsWorker(pool: WorkflowThreads): typeof Worker {
  let bundle: Promise<WorkflowBundleWithSourceMapAndFilename | undefined> | undefined;
  let creator: Promise<WorkflowCreator> | undefined;
  let users = 0;
  return class SharedThreadsWorker extends Worker {
    protected static override getOrCreateBundle(options: CompiledWorkerOptions, logger: SdkLogger): Promise<WorkflowBundleWithSourceMapAndFilename | undefined> {
      return (bundle ??= super.getOrCreateBundle(options, logger));
    }
    protected static override async createWorkflowCreator(workflowBundle: WorkflowBundleWithSourceMapAndFilename, options: CompiledWorkerOptions, logger: SdkLogger): Promise<WorkflowCreator> {
      users++;
      // The SDK's debug mode runs workflows on the main thread (no threads to build): the same
      // activity names and deadlock bound, through the SDK's own path.
      creator ??= options.debugMode
        ? super.createWorkflowCreator(workflowBundle, {
          ...options, activities: new Map([...pool.activityNames].map((name) => [name, options.activities.get(name) ?? (async () => undefined)])),
          isolateExecutionTimeoutMs: isolateTimeout(pool),
        }, logger)
        : startWorkflowThreads(pool, workflowBundle, options, logger);
      const shared = await creator;
      return {
        createWorkflow: (opts) => shared.createWorkflow(opts),
        async destroy() {
          if (--users === 0) await shared.destroy();
        },
      };
    }
  };
}

/**
 * The SDK's bound of each call into workflow code: none at all (undefined, which `vm` takes as
 * unbounded) when it is off, since any number, however large, still starts the watchdog thread.
 */
function isolateTimeout(pool: WorkflowThreads): number {
  return pool.deadlockTimeoutMs || (undefined as unknown as number);
}

/** The threads' script (the SDK's, with the deadlock bound per request): the `.ts` source, or its compiled `.js` under dist/. */
const WORKFLOW_THREAD_SCRIPT = (() => {
  const path = fileURLToPath(new URL('./workflow-thread.ts', import.meta.url));
  return existsSync(path) ? path : path.replace(/\.ts$/, '.js');
})();

/**
 * The workflow threads, as the SDK's `ThreadedVMWorkflowCreator.create` makes them, with three
 * differences: each thread's young generation is `youngGenMb` (V8 sizes it from the machine's memory:
 * 192 MB here, 150 MB of resident memory more under load with no CPU measured for it; the objects an
 * activation makes die with it), the threads' heaps are reported (`bp_workflow_thread_heap_bytes`),
 * and the threads run worker/workflow-thread.ts, which bounds each request once instead of each
 * call into the sandbox (the deadlock detection's watchdog threads) and answers each activation
 * with its sink calls (worker/workflow-thread-sinks.ts).
 */
async function startWorkflowThreads(pool: WorkflowThreads, workflowBundle: WorkflowBundleWithSourceMapAndFilename, options: CompiledWorkerOptions, logger: SdkLogger): Promise<WorkflowCreator> {
  receiveSinkCallsWithCompletions(VMWorkflowThreadProxy, createUnsafeRandomSource);
  const threads = Array.from({ length: pool.threads }, (_, i) =>
    new NodeWorker(WORKFLOW_THREAD_SCRIPT, {
      // The thread's name in `top -H` and /proc/<pid>/task/*/comm (bench/cpu.ts counts its CPU apart).
      name: `bp-workflow-${i + 1}`,
      workerData: { deadlockTimeoutMs: pool.deadlockTimeoutMs, stackTraces: pool.stackTraces } satisfies WorkflowThreadData,
      ...(pool.youngGenMb ? { resourceLimits: { maxYoungGenerationSizeMb: pool.youngGenMb } } : {}),
    }));
  const clients = threads.map((thread) => new WorkerThreadClient(thread, logger, options.patchActivationCallback));
  await Promise.all(clients.map((client) => client.send({
    type: 'init',
    workflowBundle,
    isolateExecutionTimeoutMs: isolateTimeout(pool),
    reuseV8Context: options.reuseV8Context ?? true,
    registeredActivityNames: new Set(pool.activityNames),
    hasPatchActivationCallback: options.patchActivationCallback !== undefined,
  })));
  const unobserve = observeWorkflowThreads(threads);
  const creator = new ThreadedVMWorkflowCreator(clients);
  return {
    createWorkflow: (opts) => creator.createWorkflow(opts),
    async destroy() {
      unobserve();
      await creator.destroy();
    },
  };
}

/** Every area's activities on one worker (the single task-queue layout): a name two areas use is an error, not a shadow. */
function mergeActivities(byArea: readonly (readonly [string, Record<string, unknown>])[]): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  const owner = new Map<string, string>();
  for (const [area, activities] of byArea) {
    for (const [name, fn] of Object.entries(activities)) {
      const other = owner.get(name);
      if (other) throw new Error(`activity ${name} is registered by both the ${other} and the ${area} areas; the single task-queue layout needs unique names`);
      owner.set(name, area);
      merged[name] = fn;
    }
  }
  return merged;
}
