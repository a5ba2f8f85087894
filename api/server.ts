import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type MikroORM } from '../db/orm.ts';
import { nativePool } from '../db/pool.ts';
import { observePool } from '../platform/metrics.ts';
import { holdInstanceLock } from '../domain/idempotency/liveness.ts';
import { buildServices, eventCatalog, httpServerAttachments, permissionScopes } from '../domain/registry.ts';
import { RequestLogBuffer } from '../domain/requests/log-buffer.ts';
import type { Config } from '../platform/config.ts';
import type { AreaServices } from '../platform/services.ts';
import type { Logger } from '../platform/logger.ts';
import type { TemporalHandle } from '../platform/temporal.ts';
import { createApp } from './app.ts';
import { ConcurrencyTracker, type RateLimitClock } from './http/admission.ts';
import type { AppDeps } from './http/deps.ts';

export interface RunningApi {
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

/** Builds the API's dependencies over an ORM and a Temporal client, and listens. */
export async function startApiServer(opts: {
  config: Config; orm: MikroORM; temporal: TemporalHandle; logger: Logger; port: number; host: string;
  /** Replaces some of the areas' services (tests: a payment gateway they control). */
  services?: Partial<AreaServices>;
  /** Tests: a shifted clock for the rate-limit windows (shared by the API instances of one test). */
  rateLimitClock?: RateLimitClock;
}): Promise<RunningApi> {
  const pool = await nativePool(opts.orm);
  observePool('orm', pool);
  const platform = { config: opts.config, orm: opts.orm, logger: opts.logger };
  const deps: AppDeps = {
    ...platform,
    ...buildServices(platform, opts.services),
    pool,
    temporal: opts.temporal,
    requestLog: new RequestLogBuffer(pool, opts.logger, opts.config.REQUEST_LOG_FLUSH_MS),
    events: eventCatalog,
    permissionScopes,
    concurrency: new ConcurrencyTracker(pool, (err) => opts.logger.warn('concurrency counter not updated', { error: err.message }), opts.rateLimitClock),
  };
  // Before the first claim: a claim whose owner holds no lock is taken over by other instances.
  const instanceLock = await holdInstanceLock(pool, deps.concurrency.instanceId, (err) => opts.logger.warn('instance liveness lock not held', { error: err.message }));
  const app = createApp(deps);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(opts.port, opts.host, () => resolve(s));
    s.once('error', reject);
  });
  const attached = httpServerAttachments.map((attach) => attach(server, deps));
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 30_000;
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  return {
    url: `http://${host}:${port}`,
    deps,
    async close() {
      await Promise.all(attached.map((a) => a.close()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.all([deps.requestLog.flush(), deps.concurrency.close()]);
      await instanceLock.close();
    },
  };
}
