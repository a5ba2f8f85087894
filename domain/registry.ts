import type { RouteSpec } from '../api/http/route.ts';
import type { ActivityDeps, AreaDescriptor } from '../platform/area.ts';
import type { AreaServices, PlatformServices } from '../platform/services.ts';
import { AREAS } from './areas.ts';
import { EventCatalog } from './events/catalog.ts';
import type { CustomerMetricsSource, EventConsumer } from './events/consumers.ts';

/**
 * What the processes read from the area list: each a plain derivation, computed once. The API, the
 * worker, the ORM config, the migration runner and the docs scripts use these, never the areas
 * themselves.
 */
const areas: readonly AreaDescriptor[] = AREAS;

/** Every event kind every area declares. */
export const eventCatalog = new EventCatalog(areas);

/** Every /v3 route, in area order. */
export const v3Routes: RouteSpec<any, any, any>[] = areas.flatMap((area) => {
  const routes = typeof area.routes === 'function' ? area.routes({ events: eventCatalog }) : area.routes ?? [];
  return [...routes];
});

/** Every entity the ORM knows. */
export const entities = areas.flatMap((area) => area.entities ?? []);

/** Every checked-in migration, in name order (names are numbered across areas). */
export const migrations = areas
  .flatMap((area) => area.migrations ?? [])
  .sort((a, b) => a.name.localeCompare(b.name));

/** Every permission scope a key may hold (`<scope>:read` / `<scope>:write`). */
export const permissionScopes: readonly string[] = [...new Set(areas.flatMap((area) => area.permissions))];

/** The areas' pages outside /v3 (dashboard, OAuth), mounted by the API in area order. */
export const areaPages = areas.flatMap((area) => (area.pages ? [area.pages] : []));

/** Path prefixes whose requests negotiate their own content (the areas' pages). */
export const pagePrefixes: readonly string[] = areaPages.flatMap((pages) => pages.prefixes);

/** What areas attach to each API process's HTTP server (WebSocket endpoints). */
export const httpServerAttachments = areas.flatMap((area) => (area.httpServer ? [area.httpServer] : []));

/** Every outbox consumer. */
export const eventConsumers: readonly EventConsumer[] = areas.flatMap((area) => area.consumers ?? []);

/** The `customer_metrics` of events about a customer (the one area that provides them). */
export const customerMetrics: CustomerMetricsSource | undefined = areas.find((area) => area.customerMetrics)?.customerMetrics;

/** The areas that run a worker: each on its own task queue. */
export const workerAreas = areas.filter((area) => area.workflows || area.activities);

/** Every area's Temporal Schedules, with the area whose task queue runs them. */
export const areaSchedules = areas.flatMap((area) => (area.schedules ?? []).map((schedule) => ({ area: area.name, schedule })));

/** Each area's workflows module (the worker bundles them together). */
export const workflowModules: readonly { area: string; module: URL }[] = areas.flatMap((area) =>
  area.workflows ? [{ area: area.name, module: area.workflows }] : []);

/** Every area's services, built once per process; `overrides` replace some (tests). */
export function buildServices(platform: PlatformServices, overrides: Partial<AreaServices> = {}): AreaServices {
  return Object.assign({}, ...areas.map((area) => area.services?.(platform) ?? {}), overrides) as AreaServices;
}

/** The activities of one area, over the process's dependencies. */
export function activitiesOf(area: AreaDescriptor, deps: ActivityDeps) {
  return area.activities?.(deps) ?? {};
}
