import { permissionScopes } from '../../domain/registry.ts';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import type { RateLimitClock } from '../../api/http/admission.ts';
import { startApiServer, type RunningApi } from '../../api/server.ts';
import { createOrm, type MikroORM } from '../../db/orm.ts';
import { nativePool } from '../../db/pool.ts';
import { createPaymentGateways, type PaymentGateways } from '../../domain/payments/gateways/index.ts';
import { createAccount, createKey, type CreateKeyInput } from '../../domain/accounts/service.ts';
import { loadConfig, type Config } from '../../platform/config.ts';
import { createLogger, type LogDestinations } from '../../platform/logger.ts';
import { createTemporalHandle, type TemporalHandle } from '../../platform/temporal.ts';
import { startWorkers, type RunningWorkers } from '../../worker/worker.ts';
import { withDatabase } from '../../platform/throwaway-infra.ts';
import type { AreaServices } from '../../platform/services.ts';

export interface TestPlatform {
  url: string;
  dbUrl: string;
  orm: MikroORM;
  temporal: TemporalHandle;
  config: Config;
  taskQueuePrefix: string;
  api: RunningApi;
  /** The gateways the API and worker share (the sandbox's outage switch is a test hook). */
  paymentGateways: PaymentGateways;
  /** The clock the rate-limit windows are counted on, shared by every API of the platform (offset 0 unless a test shifts it). */
  rateLimitClock: RateLimitClock;
  /** The account `newKey` makes keys for unless told another. */
  accountId: string;
  /**
   * A second API on the same database (its own ORM and pool); `dbUrl` and `temporalAddress` reach
   * the same database and Temporal another way (through a test's proxy).
   */
  startSecondApi(opts?: { dbUrl?: string; temporalAddress?: string}): Promise<RunningApi>;
  newAccount(tier?: 'standard' | 'premium'): Promise<string>;
  newKey(input?: Partial<CreateKeyInput>): Promise<string>;
  sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * Everything a test file needs, isolated: its own database cloned from the migrated template,
 * its own task queues on the shared Temporal server, an API on a free port and (optionally) a
 * worker.
 */
export interface TestPlatformOptions {
  env?: Record<string, string>;
  worker?: boolean;
  /** Where log lines go (default stdout and stderr). */
  log?: LogDestinations;
  /** Services the worker uses instead of the areas' own (e.g. a webhook transport to a test's TLS receiver). */
  workerServices?: Partial<AreaServices>;
}

export async function startTestPlatform(opts: TestPlatformOptions = {}): Promise<TestPlatform> {
  const adminUrl = inject('adminDbUrl');
  const database = `${inject('testDbPrefix')}${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`create database ${database} template ${inject('templateDb')}`);
      break;
    } catch (err) {
      // Two files cloning the template at the same instant: retry shortly.
      if (attempt > 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  const dbUrl = withDatabase(adminUrl, database);
  const taskQueuePrefix = `${database}-`;
  const config = loadConfig({
    LOG_LEVEL: 'warn', DATABASE_URL: dbUrl, TEMPORAL_ADDRESS: inject('temporalAddress'),
    TASK_QUEUE_PREFIX: taskQueuePrefix, ADMIN_TOKEN: 'test-admin-token-0123456789', REQUEST_LOG_FLUSH_MS: '100',
    // A loaded 2-core test machine can take longer than production's 4 s for a busy workflow's first
    // answer; the fault tests that measure the deadline set the production value themselves.
    TEMPORAL_CALL_TIMEOUT_MS: '30000',
    // An in-process worker serves every area from one queue: a twelfth of the start-up time. The
    // per-area layout (production's default) runs in the tests whose workers are child processes.
    TEMPORAL_TASK_QUEUES: opts.worker ? 'single' : 'per-area',
    ...opts.env,
  });
  const logger = createLogger(config.LOG_LEVEL, {}, opts.log);
  const orm = await createOrm({ url: dbUrl, poolMax: 15 });
  const paymentGateways = createPaymentGateways(config, () => nativePool(orm));
  const temporal = createTemporalHandle({ address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix, taskQueueLayout: config.TEMPORAL_TASK_QUEUES });
  let workers: RunningWorkers | undefined;
  if (opts.worker) {
    workers = await startWorkers({
      address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix, orm, logger,
      bundle: { codePath: inject('bundlePath') }, config, services: { paymentGateways, ...opts.workerServices },
      // An activity still running when the file ends (a consumer's workflow the file did not wait
      // for) is cut short instead of holding the file for the production 10 s + 30 s.
      shutdownTimes: { graceMs: 1000, forceMs: 2000 },
    });
  }
  const rateLimitClock: RateLimitClock = { offsetMs: 0 };
  const api = await startApiServer({ config, orm, temporal, logger, port: 0, host: '127.0.0.1', services: { paymentGateways }, rateLimitClock });
  const extra: { api: RunningApi; orm: MikroORM; temporal?: TemporalHandle }[] = [];
  const defaultAccountId = (await createAccount(orm, { name: 'Test account' })).id;

  return {
    url: api.url, dbUrl, orm, temporal, config, taskQueuePrefix, api, paymentGateways, rateLimitClock, accountId: defaultAccountId,
    async startSecondApi(second = {}) {
      const orm2 = await createOrm({ url: second.dbUrl ?? dbUrl, poolMax: 10 });
      const temporal2 = second.temporalAddress
        ? createTemporalHandle({ address: second.temporalAddress, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix, taskQueueLayout: config.TEMPORAL_TASK_QUEUES })
        : undefined;
      const api2 = await startApiServer({
        config, orm: orm2, temporal: temporal2 ?? temporal, logger, port: 0, host: '127.0.0.1', services: { paymentGateways }, rateLimitClock,
      });
      extra.push({ api: api2, orm: orm2, temporal: temporal2 });
      return api2;
    },
    async newAccount(tier = 'standard') {
      return (await createAccount(orm, { name: `Account ${randomBytes(3).toString('hex')}`, tier })).id;
    },
    async newKey(input = {}) {
      const key = await createKey(orm, { name: 'test key', type: 'test', accountId: defaultAccountId, ...input }, permissionScopes);
      return key.secret;
    },
    async sql(text, values) {
      return (await orm.em.getConnection().getNativeClient().then((p) => p.query(text, values))).rows;
    },
    async close() {
      for (const e of extra) {
        await e.api.close();
        await e.temporal?.close();
        await e.orm.close();
      }
      await api.close();
      await workers?.shutdown();
      await temporal.close();
      await orm.close(true);
      // On a shared server the database goes in the background (a DROP waits for a checkpoint);
      // on a throwaway one it stays until the server is deleted (global-setup.ts).
      if (!inject('dropTestDbs')) return void (await admin.end());
      void admin.query(`drop database if exists ${database} with (force)`)
        .catch(() => undefined) // the run's teardown drops what is left
        .finally(() => admin.end().catch(() => undefined));
    },
  };
}
