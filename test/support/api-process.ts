/**
 * An API in its own process, for the tests that kill one mid-request (SIGKILL: no graceful
 * shutdown, no chance to release or complete an idempotency claim). Configured by the environment
 * like the real API. With API_HOLD_BEFORE_ANSWER=1 a request that claimed an Idempotency-Key does
 * all its work but never stores or sends its answer: it prints `{"holding":true}` and waits, so a
 * test can kill the process between the work and the answer. Prints one JSON line with its url once it listens.
 * test/support/api-processes.ts starts them as replicas.
 */
import { startApiServer } from '../../api/server.ts';
import { createOrm } from '../../db/orm.ts';
import { IdempotencyStore } from '../../domain/idempotency/store.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createTemporalHandle } from '../../platform/temporal.ts';

if (process.env.API_HOLD_BEFORE_ANSWER === '1') {
  IdempotencyStore.prototype.complete = async () => {
    console.log(JSON.stringify({ holding: true }));
    await new Promise(() => undefined);
  };
}
const config = loadConfig();
const orm = await createOrm({ url: config.DATABASE_URL!, poolMax: 5 });
const temporal = createTemporalHandle({ address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, taskQueueLayout: config.TEMPORAL_TASK_QUEUES });
// RATE_LIMIT_CLOCK_OFFSET_MS: the shifted rate-limit clock of the test's own API (see platform.ts), so both count one window.
const rateLimitClock = { offsetMs: Number(process.env.RATE_LIMIT_CLOCK_OFFSET_MS ?? 0) };
const api = await startApiServer({ config, orm, temporal, logger: createLogger(config.LOG_LEVEL), port: 0, host: '127.0.0.1', rateLimitClock });
console.log(JSON.stringify({ ready: true, url: api.url, pid: process.pid }));
