/**
 * A worker in its own process, for the tests that kill one mid-task (SIGKILL: no graceful
 * shutdown, no chance to report the activity). Configured by the environment like the real worker;
 * the workflow bundle comes from BUNDLE_PATH (built once by the test run's global setup). With
 * WORKER_STANDBY=1 it gets everything ready (modules, database, connection, workers created) and
 * starts polling only when a line arrives on stdin. WORKER_AREAS (comma-separated) limits the task
 * queues it polls to the areas a test needs (less to start). Prints one JSON line once it polls.
 */
import { createOrm } from '../../db/orm.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { startWorkers } from '../../worker/worker.ts';

const go = process.env.WORKER_STANDBY === '1' ? new Promise((resolve) => process.stdin.once('data', resolve)) : undefined;
const areas = process.env.WORKER_AREAS ? process.env.WORKER_AREAS.split(',') : undefined;
const config = loadConfig();
const orm = await createOrm({ url: config.DATABASE_URL!, poolMax: 5 });
await startWorkers({
  address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX,
  orm, logger: createLogger(config.LOG_LEVEL), config, bundle: { codePath: process.env.BUNDLE_PATH! }, startPolling: go, areas,
});
console.log(JSON.stringify({ ready: true, pid: process.pid }));
