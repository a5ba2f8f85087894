/**
* A worker in its own process, for the tests that kill one mid-charge (SIGKILL: no graceful
 * shutdown, no chance to report the activity). Settings come from the environment; the workflow
 * bundle from BUNDLE_PATH (built once by the test run's global setup).
 */
import { createOrm } from '../../db/orm.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { startWorkers } from '../../worker/worker.ts';

const config = loadConfig();
const orm = await createOrm({ url: config.DATABASE_URL!, poolMax: 5 });
await startWorkers({
  address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX,
  orm, logger: createLogger('warn'), config, bundle: { codePath: process.env.BUNDLE_PATH! },
});
console.log(JSON.stringify({ ready: true, pid: process.pid }));
