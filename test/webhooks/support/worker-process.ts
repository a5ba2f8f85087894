/**
 * A worker in its own process, so a test can kill it (SIGKILL: no graceful shutdown, no activity
 * completion) mid-delivery. Configured by the environment like the real worker; prints one JSON
 * line when it polls.
 */
import { createOrm } from '../../../db/orm.ts';
import { loadConfig } from '../../../platform/config.ts';
import { createLogger } from '../../../platform/logger.ts';
import { startWorkers } from '../../../worker/worker.ts';

const config = loadConfig();
const orm = await createOrm({ url: config.DATABASE_URL!, poolMax: 5 });
await startWorkers({
  address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX,
  orm, logger: createLogger(config.LOG_LEVEL), config, bundle: { codePath: process.env.WORKFLOW_BUNDLE_PATH! },
});
console.log(JSON.stringify({ ready: true, pid: process.pid }));
