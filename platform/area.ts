import type { Server } from 'node:http';
import type { EntitySchema } from '@mikro-orm/core';
import type { Migration } from '@mikro-orm/migrations';
import type { Client } from '@temporalio/client';
import type { AnyRouter } from '@trpc/server';
import type { Router } from 'express';
import type { RouteSpec } from '../api/http/route.ts';
import type { AppDeps } from '../api/http/deps.ts';
import type { EventConsumer, CustomerMetricsSource } from '../domain/events/consumers.ts';
import type { EventCatalog, EventKind } from '../domain/events/catalog.ts';
import type { PlatformServices, AreaServices } from './services.ts';

/**
 * An area's descriptor: the one place that ties its pieces together. The API, the worker, the ORM,
 * the migration runner, the event catalog, the OpenAPI document, the permission list and the admin
 * router read the list of descriptors (domain/areas.ts); nothing else names areas.
 * docs/adding-an-area.md walks through writing one.
 */
export interface AreaDescriptor<Name extends string = string, Admin extends Record<string, AnyRouter> = Record<string, AnyRouter>> {
  /** The area's name: its folder under each layer and its task queue (`<TASK_QUEUE_PREFIX><name>`). */
  name: Name;
  /** Permission scopes its routes use (`<scope>:read|write`). */
  permissions: readonly string[];
  /** Its /v3 routes, or a factory when the routes depend on what other areas declare (the event catalog). */
  routes?: readonly RouteSpec<any, any, any>[] | ((ctx: AreaContext) => readonly RouteSpec<any, any, any>[]);
  /**
   * The module that exports its workflow functions (`workflows/<name>/index.ts`, resolved from the
   * descriptor's file). The worker bundles every area's module into one workflow bundle.
   */
  workflows?: URL;
  /** Its activities, registered on its task queue. */
  activities?: (deps: ActivityDeps) => Record<string, (...args: any[]) => Promise<unknown>>;
  entities?: readonly EntitySchema<any, any>[];
  /** Checked-in migrations; the runner applies every area's in name order (`0007-…`). */
  migrations?: readonly { name: string; class: new (...args: any[]) => Migration }[];
  /** Event kinds it records, each with its payload schema and example. */
  events?: readonly EventKind[];
  /** What it does with events from the outbox (start workflows). */
  consumers?: readonly EventConsumer[];
  /** `customer_metrics` for events about a customer (one area provides it). */
  customerMetrics?: CustomerMetricsSource;
  /** Services it builds once per process and hands to its routes and activities (see AreaServices). */
  services?: (platform: PlatformServices) => Partial<AreaServices>;
  /** Routers merged into the internal tRPC admin API at /admin/trpc. */
  admin?: Admin;
  /**
   * Browser pages and protocol endpoints outside /v3 (the dashboard, the OAuth server). Requests under
   * `prefixes` skip the API's JSON content negotiation and body-type check: `mount` answers them itself,
   * with its own Content-Security-Policy where it serves HTML. Unanswered requests fall through to the
   * API's 404.
   */
  pages?: { prefixes: readonly string[]; mount(router: Router, deps: AppDeps): void };
  /** Attaches to each API process's HTTP server (a WebSocket endpoint); `close` runs before the server closes. */
  httpServer?: (server: Server, deps: AppDeps) => { close(): Promise<void> };
  /** Temporal Schedules that start its periodic workflows on its task queue (created at start when missing). */
  schedules?: readonly AreaSchedule[];
}

/** A periodic workflow of an area, run by a Temporal Schedule (worker/schedules.ts). */
export interface AreaSchedule {
  id: string;
  /** A Temporal interval, e.g. `15m`. */
  every: string;
  workflowType: string;
  workflowId: string;
  args: unknown[];
}

/** What an area's route factory may read: what all areas declare together. */
export interface AreaContext {
  events: EventCatalog;
}

/** What every activity factory receives: the platform's services and every area's. */
export type ActivityDeps = PlatformServices & AreaServices & {
  /** A client on the worker's connection, for activities that start workflows (the event dispatcher). */
  temporal: Client;
  /** The task queue of an area (the event dispatcher starts other areas' workflows). */
  taskQueue(area: string): string;
  /** What all areas declare together, for the event dispatcher. */
  eventConsumers: readonly EventConsumer[];
  customerMetrics?: CustomerMetricsSource;
};

/** Identity function that keeps the area's literal name and admin router types. */
export function defineArea<const Name extends string, Admin extends Record<string, AnyRouter> = Record<never, AnyRouter>>(
  area: AreaDescriptor<Name, Admin>,
): AreaDescriptor<Name, Admin> {
  return area;
}

export type { AppDeps };
