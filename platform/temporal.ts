import { Client, Connection } from '@temporalio/client';
import { serviceUnavailable } from './errors.ts';
import { trackedCalls } from './temporal-calls.ts';
import { clientInterceptors } from './temporal-interceptors.ts';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  namespace: string;
  /** The task queue of an area (`<TASK_QUEUE_PREFIX><area>`, see taskQueueName): its workflows and activities run there. */
  taskQueue(area: string): string;
  /** Throws 503 service_unavailable when Temporal cannot be reached (checked at most every 2 s). */
  ensureAvailable(): Promise<void>;
  /** Health of the server and whether a worker polls `area`'s queue (for /readyz). */
  probe(area?: string): Promise<{ reachable: boolean; workerPolling: boolean }>;
  close(): Promise<void>;
}

/** How areas map to task queues (TEMPORAL_TASK_QUEUES): one queue each, or one for all. */
export type TaskQueueLayout = 'per-area' | 'single';

/** The task queue an area's workflows and activities run on: `<prefix><area>`, or `<prefix>all` in the single layout. */
export function taskQueueName(prefix: string, area: string, layout: TaskQueueLayout = 'per-area'): string {
  return layout === 'single' ? `${prefix}all` : `${prefix}${area}`;
}

/**
 * One Temporal client per process. The connection is lazy: the API starts (and serves what does
 * not need Temporal) while Temporal is down, and endpoints that need it answer 503 until it is back.
 */
export function createTemporalHandle(opts: { address: string; namespace: string; taskQueuePrefix: string; taskQueueLayout?: TaskQueueLayout }): TemporalHandle {
  const calls = trackedCalls();
  const connection = Connection.lazy({ address: opts.address, connectTimeout: '3s', interceptors: calls.interceptors });
  const client = new Client({ connection, namespace: opts.namespace, interceptors: clientInterceptors() });
  // Last known reachability. While Temporal is known to be up, a stale answer is refreshed in the
  // background (a slow probe under load must not turn into a 503); while it is down or unknown,
  // callers wait for the probe. One probe at a time.
  let lastCheck = 0;
  let lastOk = false;
  let probing: Promise<void> | null = null;

  const reachable = async (): Promise<boolean> => {
    try {
      await connection.withDeadline(Date.now() + 2000, () => connection.healthService.check({}));
      return true;
    } catch {
      return false;
    }
  };
  const refresh = (): Promise<void> =>
    (probing ??= reachable().then((ok) => {
      lastOk = ok;
      lastCheck = Date.now();
      probing = null;
    }));

  return {
    client,
    connection,
    namespace: opts.namespace,
    taskQueue: (area) => taskQueueName(opts.taskQueuePrefix, area, opts.taskQueueLayout),
    async ensureAvailable() {
      if (Date.now() - lastCheck > 2000) {
        const probe = refresh();
        if (!lastOk) await probe;
      }
      if (!lastOk) throw serviceUnavailable('The workflow engine (Temporal)');
    },
    async probe(area = 'platform') {
      if (!(await reachable())) return { reachable: false, workerPolling: false };
      try {
        const res = await connection.withDeadline(Date.now() + 2000, () =>
          connection.workflowService.describeTaskQueue({
            namespace: opts.namespace,
            taskQueue: { name: taskQueueName(opts.taskQueuePrefix, area, opts.taskQueueLayout) },
            taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
          }));
        return { reachable: true, workerPolling: (res.pollers?.length ?? 0) > 0 };
      } catch {
        return { reachable: true, workerPolling: false };
      }
    },
    // Calls in flight (a retry waiting for its next attempt included) finish first, for up to 5 s.
    close: () => calls.close(5000, async () => {
      await probing;
      await connection.close();
    }),
  };
}
