/** Production entry point of the worker: `node dist/worker/main.js`. */
import { createOrm } from '../db/orm.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { onShutdown, requireSetting } from '../platform/process.ts';
import { createTemporalHandle } from '../platform/temporal.ts';
import { ensureSchedules } from './schedules.ts';
import { startWorkers } from './worker.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL, { service: 'worker' });
const address = requireSetting(config, 'TEMPORAL_ADDRESS');
const orm = await createOrm({ url: requireSetting(config, 'DATABASE_URL'), poolMax: config.DATABASE_POOL_MAX, statementTimeoutMs: 30_000 });
const temporal = createTemporalHandle({ address, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX });
const workers = await startWorkers({
  address, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, orm, logger, logLevel: config.LOG_LEVEL,
});
await ensureSchedules(temporal.client, temporal.taskQueue('platform'));
onShutdown(logger, async () => {
  await workers.shutdown();
  await temporal.close();
  await orm.close();
});
workers.done.catch((err: unknown) => {
  logger.error('worker stopped', { error: err });
  process.exitCode = 1;
});
