import type { Pool } from 'pg';
import type { EventCatalog } from '../../domain/events/catalog.ts';
import type { RequestLogBuffer } from '../../domain/requests/log-buffer.ts';
import type { AreaServices, PlatformServices } from '../../platform/services.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { ConcurrencyTracker } from './admission.ts';

/**
 * Everything the API layer needs, built once per process (`api/server.ts`): the platform's services,
 * every area's services (AreaServices, e.g. `paymentGateways`) and what all areas declare together.
 */
export interface AppDeps extends PlatformServices, AreaServices {
  /** The ORM's own `pg` pool, for the hot-path statements written as plain SQL. */
  pool: Pool;
  temporal: TemporalHandle;
  requestLog: RequestLogBuffer;
  /** This instance's share of the per-key concurrency limit. */
  concurrency: ConcurrencyTracker;
  /** Every event kind every area records. */
  events: EventCatalog;
  /** Every permission scope a key may hold. */
  permissionScopes: readonly string[];
}
