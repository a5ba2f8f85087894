import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nativePool, type MikroORM } from '../db/orm.ts';
import { createPaymentGateways, type PaymentGateways } from '../domain/payments/gateways/index.ts';
import { RequestLogBuffer } from '../domain/requests/log-buffer.ts';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { TemporalHandle } from '../platform/temporal.ts';
import { createApp } from './app.ts';
import { ConcurrencyTracker } from './http/admission.ts';
import type { AppDeps } from './deps.ts';

export interface RunningApi {
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

/** Builds the API's dependencies over an ORM and a Temporal client, and listens. */
export async function startApiServer(opts: {
  config: Config; orm: MikroORM; temporal: TemporalHandle; logger: Logger; port: number; host: string;
  paymentGateways?: PaymentGateways;
}): Promise<RunningApi> {
  const pool = await nativePool(opts.orm);
  const deps: AppDeps = {
    config: opts.config,
    orm: opts.orm,
    pool,
    temporal: opts.temporal,
    logger: opts.logger,
    requestLog: new RequestLogBuffer(pool, opts.logger, opts.config.REQUEST_LOG_FLUSH_MS),
    paymentGateways: opts.paymentGateways ?? createPaymentGateways(opts.config, async () => pool),
    concurrency: new ConcurrencyTracker(pool, (err) => opts.logger.warn('concurrency counter not updated', { error: err.message })),
  };
  const app = createApp(deps);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(opts.port, opts.host, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 30_000;
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  return {
    url: `http://${host}:${port}`,
    deps,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.all([deps.requestLog.flush(), deps.concurrency.close()]);
    },
  };
}
