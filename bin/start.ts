/**
 * `npm start`: the whole platform on embedded defaults, in one process tree.
 * PostgreSQL: DATABASE_URL, else an embedded server under .data/ (kept between runs).
 * Temporal: TEMPORAL_ADDRESS, else `temporal server start-dev` on a SQLite file under .data/,
 * with the Web UI on TEMPORAL_UI_PORT. Then migrations, the worker and the API on PORT.
 * Ctrl-C stops everything this started.
 */
import '../platform/telemetry-init.ts'; // first: tracing patches `pg` as it loads
import { join, relative } from 'node:path';
import { startApiServer } from '../api/server.ts';
import { createOrm, migrate } from '../db/orm.ts';
import { buildDashboard, dashboardBuilt } from '../domain/dashboard/assets.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { DEFAULT_DATA_DIR, maskDatabaseUrl, resolveDatabase } from '../platform/local-database.ts';
import { createLogger } from '../platform/logger.ts';
import { startMemoryRelease } from '../platform/memory-release.ts';
import { onShutdown } from '../platform/process.ts';
import { createTemporalHandle } from '../platform/temporal.ts';
import { ensureSchedules } from '../worker/schedules.ts';
import { startWorkers } from '../worker/worker.ts';

const config = loadConfigOrExit();
const dataDir = config.DATA_DIR ?? DEFAULT_DATA_DIR;
const logger = createLogger(config.LOG_LEVEL, { service: 'platform' });
const stops: (() => Promise<void>)[] = [];
const stopAll = async () => {
  for (const stop of stops.reverse()) await stop().catch((err: unknown) => logger.error('stop failed', { error: err }));
};
const shutdown = onShutdown(logger, stopAll);

try {
  const step = (what: string) => console.log(`• ${what}`);

  if (!config.DATABASE_URL) step(`embedded PostgreSQL (${relative(process.cwd(), join(dataDir, 'postgres')) || '.'})`);
  const database = await resolveDatabase(config, { advertise: true });
  stops.push(database.stop);
  const databaseUrl = database.url;
  step(`database: ${maskDatabaseUrl(databaseUrl)} (${database.source})`);

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi = config.TEMPORAL_UI_URL ?? null;
  if (!temporalAddress) {
    step(`starting Temporal dev server (${relative(process.cwd(), join(dataDir, 'temporal.db'))})`);
    const { startTemporalDevServer } = await import('../platform/temporal-dev-server.ts');
    const server = await startTemporalDevServer({
      dbFile: join(dataDir, 'temporal.db'),
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      logFile: join(dataDir, 'temporal.log'),
    });
    stops.push(server.stop);
    temporalAddress = server.address;
    temporalUi = server.uiUrl;
  }

  const orm = await createOrm({ url: databaseUrl, poolMax: config.DATABASE_POOL_MAX });
  stops.push(() => orm.close());
  step('running migrations');
  await migrate(orm);

  const temporal = createTemporalHandle({ address: temporalAddress, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, taskQueueLayout: config.TEMPORAL_TASK_QUEUES });
  stops.push(() => temporal.close());
  step('starting the worker');
  const workers = await startWorkers({
    address: temporalAddress, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX,
    orm, logger, logLevel: config.LOG_LEVEL,
  });
  stops.push(() => workers.shutdown());
  shutdown.exitWhenEnded(workers.done, 'workers stopped');
  await ensureSchedules(temporal.client, config.TASK_QUEUE_PREFIX, (area) => temporal.taskQueue(area));

  if (!dashboardBuilt()) {
    step('building the dashboard (dist/dashboard)');
    await buildDashboard();
  }

  const api = await startApiServer({ config, orm, temporal, logger, port: config.PORT, host: config.HOST });
  stops.push(() => api.close());
  const base = api.url.replace('127.0.0.1', 'localhost');
  const stopMemoryRelease = startMemoryRelease({ idleMs: config.MEMORY_RELEASE_IDLE_MS, trimEveryMs: config.MALLOC_TRIM_INTERVAL_MS, logger });
  stops.push(async () => stopMemoryRelease());

  console.log(`
Business Platform is running.

  API          ${base}/v3
  API docs     ${base}/docs   (OpenAPI: ${base}/v3/openapi.json)
  Dashboard    ${base}/dashboard   (first owner: npm run cli -- users create --email … --role owner --password …)
  Temporal UI  ${temporalUi ?? '(external Temporal: see your cluster\'s UI)'}
  Health       ${base}/readyz

Create a first (test-mode) key and call the API:

  npm run --silent cli -- keys create --name "My first key" --type test
  curl -H "Authorization: Bearer <key>" -H "Content-Type: application/json" \\
       -d '{"email":"ada@example.com","name":"Ada Lovelace"}' ${base}/v3/customers

Press Ctrl-C to stop everything.
`);
} catch (err) {
  console.error(`\nCould not start the platform: ${(err as Error).message}`);
  await stopAll();
  process.exit(1);
}
