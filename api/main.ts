/** Production entry point of the API: `node dist/api/main.js`. */
import '../platform/telemetry-init.ts'; // first: tracing patches `pg` as it loads
import { createOrm } from '../db/orm.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startMemoryRelease } from '../platform/memory-release.ts';
import { onShutdown, requireSetting } from '../platform/process.ts';
import { createTemporalHandle } from '../platform/temporal.ts';
import { startApiServer } from './server.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL, { service: 'api' });
const orm = await createOrm({ url: requireSetting(config, 'DATABASE_URL'), poolMax: config.DATABASE_POOL_MAX });
const temporal = createTemporalHandle({
  address: requireSetting(config, 'TEMPORAL_ADDRESS'), namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, taskQueueLayout: config.TEMPORAL_TASK_QUEUES,
});
const api = await startApiServer({ config, orm, temporal, logger, port: config.PORT, host: config.HOST });
logger.info('api listening', { url: api.url });
const stopMemoryRelease = startMemoryRelease({ idleMs: config.MEMORY_RELEASE_IDLE_MS, trimEveryMs: config.MALLOC_TRIM_INTERVAL_MS, logger });
onShutdown(logger, async () => {
  stopMemoryRelease();
  await api.close();
  await temporal.close();
  await orm.close();
});
