/** Production entry point of the worker: `node dist/worker/main.js`. */
import '../platform/telemetry-init.ts'; // first: tracing patches `pg` as it loads
import { createServer } from 'node:http';
import { createOrm } from '../db/orm.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startMemoryRelease } from '../platform/memory-release.ts';
import { renderMetrics } from '../platform/metrics.ts';
import { onShutdown, requireSetting } from '../platform/process.ts';
import { createTemporalHandle } from '../platform/temporal.ts';
import { ensureSchedules } from './schedules.ts';
import { startWorkers } from './worker.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL, { service: 'worker' });
const address = requireSetting(config, 'TEMPORAL_ADDRESS');
const orm = await createOrm({ url: requireSetting(config, 'DATABASE_URL'), poolMax: config.DATABASE_POOL_MAX, statementTimeoutMs: 30_000 });
const temporal = createTemporalHandle({ address, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, taskQueueLayout: config.TEMPORAL_TASK_QUEUES });
const workers = await startWorkers({
  address, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, orm, logger, logLevel: config.LOG_LEVEL,
});
await ensureSchedules(temporal.client, config.TASK_QUEUE_PREFIX, (area) => temporal.taskQueue(area));
// A worker-only process has no API to serve /metrics: its own listener, when asked for.
const metricsServer = config.METRICS_PORT === undefined ? undefined : createServer((req, res) => {
  if (req.method !== 'GET' || req.url !== '/metrics') return void res.writeHead(404).end();
  renderMetrics().then(({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType }).end(body), () => res.writeHead(500).end());
}).listen(config.METRICS_PORT, config.HOST, () => logger.info('worker metrics listening', { port: config.METRICS_PORT }));
const stopMemoryRelease = startMemoryRelease({ idleMs: config.MEMORY_RELEASE_IDLE_MS, trimEveryMs: config.MALLOC_TRIM_INTERVAL_MS, logger });
const shutdown = onShutdown(logger, async () => {
  stopMemoryRelease();
  metricsServer?.close();
  await workers.shutdown();
  await temporal.close();
  await orm.close();
});
// Workers that stop on their own (a fatal error, a workflow thread lost) poll nothing more: the
// process exits 1 for its supervisor to replace, instead of living on with its event dispatch.
shutdown.exitWhenEnded(workers.done, 'workers stopped');
logger.info('worker ready', { metrics_port: config.METRICS_PORT ?? null });
