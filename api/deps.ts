import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { ConcurrencyTracker } from './http/admission.ts';
import type { PaymentGateways } from '../domain/payments/gateways/index.ts';
import type { RequestLogBuffer } from '../domain/requests/log-buffer.ts';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { TemporalHandle } from '../platform/temporal.ts';

/** Everything the API layer needs, built once per process (`api/main.ts`, the launcher, tests). */
export interface AppDeps {
  config: Config;
  orm: MikroORM;
  /** The ORM's own `pg` pool, for the hot-path statements written as plain SQL. */
  pool: Pool;
  temporal: TemporalHandle;
  logger: Logger;
  requestLog: RequestLogBuffer;
  /** Payment gateways (card tokenization happens in the API, before any workflow sees the card). */
  paymentGateways: PaymentGateways;
  /** This instance's share of the per-key concurrency limit. */
  concurrency: ConcurrencyTracker;
}
