import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Client } from '@temporalio/client';
import { createActivities } from '../activities/index.ts';
import { closeSenderConnections } from '../domain/webhooks/sender.ts';
import type { Config } from '../platform/config.ts';
import { startEventDispatchTrigger } from './event-dispatch.ts';
import { nativePool } from '../db/orm.ts';
import { createPaymentGateways, type PaymentGateways } from '../domain/payments/gateways/index.ts';
import { loadConfig } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { AREAS_WITH_QUEUES, taskQueueName } from '../platform/temporal.ts';

const sourceExt = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
/** The one workflowsPath. */
export const WORKFLOWS_PATH = fileURLToPath(new URL(`../workflows/index${sourceExt}`, import.meta.url));
/** Where `npm run build` writes the prebuilt bundle that production workers load. */
export const PREBUILT_BUNDLE = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/** Bundles the workflow code once (tests and `npm run build` call this; workers reuse the result). */
export async function buildWorkflowBundle(): Promise<{ code: string }> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  return { code };
}

/** The prebuilt bundle when there is one (production), else bundle from source (development). */
export function defaultBundle(): WorkflowBundleOption | undefined {
  return existsSync(PREBUILT_BUNDLE) ? { codePath: PREBUILT_BUNDLE } : undefined;
}

let runtimeInstalled = false;
function installRuntime(level: string): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const sdkLevel = level === 'debug' ? 'DEBUG' : level === 'info' ? 'INFO' : 'WARN';
  Runtime.install({ logger: new DefaultLogger(sdkLevel as 'WARN') });
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
  /** Payment gateways for the payment activities; default: built from the environment. */
  paymentGateways?: PaymentGateways;
}

export interface RunningWorkers {
  /** Settles when every worker has stopped (rejects if one failed). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * One worker per area task queue, sharing one connection and one workflow bundle. Each worker
 * polls only its area's queue, so an area can be scaled (more replicas) on its own.
 */
export async function startWorkers(opts: WorkerOptions): Promise<RunningWorkers> {
  installRuntime(opts.logLevel ?? 'warn');
  const connection = await NativeConnection.connect({ address: opts.address });
  const bundle = opts.bundle ?? defaultBundle() ?? (await buildWorkflowBundle());
  const config = opts.config ?? loadConfig();
  // A client on the worker's own connection, for activities that start workflows (the event dispatcher).
  const client = new Client({ connection, namespace: opts.namespace });
  const activities = createActivities({
    orm: opts.orm,
    config,
    logger: opts.logger,
    temporal: client,
    taskQueue: (area) => taskQueueName(opts.taskQueuePrefix, area),
    gateways: opts.paymentGateways ?? createPaymentGateways(config, () => nativePool(opts.orm)),
  });
  const workers = await Promise.all(
    AREAS_WITH_QUEUES.map((area) =>
      Worker.create({
        connection,
        namespace: opts.namespace,
        taskQueue: taskQueueName(opts.taskQueuePrefix, area),
        workflowBundle: bundle,
        activities: activities[area],
        shutdownGraceTime: '10s',
      })),
  );
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  const eventDispatch = await startEventDispatchTrigger({
    orm: opts.orm, client, taskQueuePrefix: opts.taskQueuePrefix, sweepMs: config.EVENT_DISPATCH_SWEEP_MS, logger: opts.logger,
  });
  opts.logger.info('workers polling', { queues: AREAS_WITH_QUEUES.map((a) => taskQueueName(opts.taskQueuePrefix, a)) });
  let stopping: Promise<void> | null = null;
  return {
    done,
    shutdown() {
      stopping ??= (async () => {
        await eventDispatch.stop();
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await done.catch(() => undefined);
        closeSenderConnections();
        await connection.close();
      })();
      return stopping;
    },
  };
}
