import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';

/** What every process builds once at start and hands to every area: settings, the ORM, the logger. */
export interface PlatformServices {
  config: Config;
  orm: MikroORM;
  logger: Logger;
}

/**
 * Services that areas build once per process (their descriptor's `services`) and use in their routes
 * and activities. Empty here: each area adds its own members by declaration merging, next to its
 * descriptor, e.g. in domain/payments/area.ts:
 *
 *   declare module '../../platform/services.ts' {
 *     interface AreaServices { paymentGateways: PaymentGateways }
 *   }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface AreaServices {}
