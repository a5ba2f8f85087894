import { createEventActivities } from '../../activities/platform/events.ts';
import { createPlatformActivities } from '../../activities/platform/index.ts';
import { accountsRouter, keysRouter } from '../../api/admin/platform/router.ts';
import { eventRoutes } from '../../api/v3/platform/events.ts';
import { Migration0001PlatformFoundation } from '../../db/migrations/0001-platform-foundation.ts';
import { Migration0006AdmissionPerKey } from '../../db/migrations/0006-admission-per-key.ts';
import { Migration0007AdmissionClock } from '../../db/migrations/0007-admission-clock.ts';
import { Migration0008InstallationSettings } from '../../db/migrations/0008-installation-settings.ts';
import { Migration0011CrashSafeIdempotency } from '../../db/migrations/0011-crash-safe-idempotency.ts';
import { Migration0120InstantAdmission } from '../../db/migrations/0120-instant-admission.ts';
import { Migration0135EventDispatchClaims } from '../../db/migrations/0135-event-dispatch-claims.ts';
import { Migration0140Assert } from '../../db/migrations/0140-assert.ts';
import { Migration0162EventsByCustomer } from '../../db/migrations/0162-events-by-customer.ts';
import { Migration0170EventsTypePattern } from '../../db/migrations/0170-events-type-pattern.ts';
import { defineArea } from '../../platform/area.ts';
import { Account, ApiKey } from '../accounts/entities.ts';
import { DomainEvent } from '../events/entities.ts';
import { IdempotencyRecord } from '../idempotency/entities.ts';
import { ApiKeyDailyUsage, RequestLog } from '../requests/entities.ts';

/**
 * The platform: accounts and API keys, rate limits, idempotency, the request log, the event outbox
 * and its dispatcher, and housekeeping. Every other area builds on it; it imports none of them.
 */
export const platformArea = defineArea({
  name: 'platform',
  // /v3/events is read with the webhooks scope. The API conventions also publish scopes for areas
  // not built yet; keys may hold them, and each moves to its area's descriptor when that area lands.
  permissions: ['webhooks'],
  routes: eventRoutes,
  workflows: new URL('../../workflows/platform/index.ts', import.meta.url),
  activities: (deps) => ({ ...createPlatformActivities(deps), ...createEventActivities(deps) }),
  entities: [Account, ApiKey, DomainEvent, IdempotencyRecord, RequestLog, ApiKeyDailyUsage],
  migrations: [
    { name: '0001-platform-foundation', class: Migration0001PlatformFoundation },
    { name: '0006-admission-per-key', class: Migration0006AdmissionPerKey },
    { name: '0007-admission-clock', class: Migration0007AdmissionClock },
    { name: '0008-installation-settings', class: Migration0008InstallationSettings },
    { name: '0011-crash-safe-idempotency', class: Migration0011CrashSafeIdempotency },
    { name: '0120-instant-admission', class: Migration0120InstantAdmission },
    { name: '0135-event-dispatch-claims', class: Migration0135EventDispatchClaims },
    { name: '0140-assert', class: Migration0140Assert },
    { name: '0162-events-by-customer', class: Migration0162EventsByCustomer },
    { name: '0170-events-type-pattern', class: Migration0170EventsTypePattern },
  ],
  admin: { accounts: accountsRouter, keys: keysRouter },
});
