import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { nativePool } from '../../db/pool.ts';
import type { Logger } from '../../platform/logger.ts';
import { scopedEm } from '../scope.ts';
import type { CustomerMetrics, CustomerMetricsSource, DispatchBatchResult, EventConsumer, FirstStepContext, OutboxEvent, WorkflowStartRequest } from './consumers.ts';

/** The PostgreSQL channel the `events` insert trigger notifies (migration 0003). */
export const EVENTS_CHANNEL = 'bp_events';

export interface DispatchDeps {
  orm: MikroORM;
  temporal: Client;
  taskQueue(area: string): string;
  consumers: readonly EventConsumer[];
  /** `customer_metrics` for events about a customer; without it they carry none. */
  customerMetrics?: CustomerMetricsSource;
  logger?: Logger;
  /** Workflow task timeout of the started workflows; default: Temporal's (10 s). */
  workflowTaskTimeoutMs?: number;
  /** Called as work progresses (the activity's heartbeat, so a dispatcher lost with its worker is retried soon). */
  heartbeat?: () => void;
  /** The worker's services, for consumers' first steps (see EventConsumer.firstStep); without them every planned workflow is started. */
  services?: FirstStepContext['services'];
}

interface EventRow {
  id: string;
  account_id: string;
  livemode: boolean;
  type: string;
  data: Record<string, unknown>;
  customer_id: string | null;
  request_id: string | null;
  customer_metrics: CustomerMetrics | null;
  created_at: Date;
}

/** Workflow starts in flight at once (each is one round trip to Temporal). */
const START_CONCURRENCY = 32;
/** Events planned at once (consumers read the database; reads on one scoped EntityManager may overlap). */
const PLAN_CONCURRENCY = 8;
/** First steps in flight at once (a webhook's first attempt: three statements and one HTTP request). */
const FIRST_STEP_CONCURRENCY = 32;

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * One pass over the outbox: reads up to `batchSize` undispatched events (oldest first, across
 * accounts — the dispatcher is the one reader that is not confined to a scope; each consumer
 * plans with an EntityManager scoped to the event's account and mode), stores the customer
 * metrics of events about a customer, starts every planned workflow under its deterministic id
 * (reject-duplicate, so an event seen twice starts nothing twice), and only then marks the events
 * dispatched. A crash anywhere leaves the event undispatched for the next pass; an event whose
 * planning or start failed stays undispatched too and is retried at the next sweep.
 */
export async function dispatchPendingEvents(deps: DispatchDeps, batchSize: number): Promise<DispatchBatchResult> {
  const pool = await nativePool(deps.orm);
  const { rows } = await pool.query<EventRow>(
    `select id, account_id, livemode, type, data, customer_id, request_id, customer_metrics, created_at
       from events where dispatched_at is null order by id limit $1`,
    [batchSize],
  );
  if (rows.length === 0) return { events: 0, started: 0, alreadyStarted: 0, failed: 0, more: false };
  const t0 = performance.now();
  const lap = () => Math.round(performance.now() - t0);

  const scoped = new Map<string, EntityManager>();
  const emFor = (row: EventRow) => {
    const key = `${row.account_id}:${row.livemode}`;
    let sem = scoped.get(key);
    if (!sem) scoped.set(key, (sem = scopedEm(deps.orm, { accountId: row.account_id, livemode: row.livemode })));
    return sem;
  };

  // Customer metrics first, committed before any delivery can read the event.
  const metricsCache = new Map<string, Promise<CustomerMetrics>>();
  const metricIds: string[] = [];
  const metricValues: string[] = [];
  const failedIds = new Set<string>();
  await mapLimit(rows.filter((r) => deps.customerMetrics && r.customer_id && !r.customer_metrics), PLAN_CONCURRENCY, async (row) => {
    deps.heartbeat?.();
    const key = `${row.account_id}:${row.livemode}:${row.customer_id}`;
    try {
      let metrics = metricsCache.get(key);
      if (!metrics) metricsCache.set(key, (metrics = deps.customerMetrics!(emFor(row), row.customer_id!)));
      row.customer_metrics = await metrics;
      metricIds.push(row.id);
      metricValues.push(JSON.stringify(row.customer_metrics));
    } catch (err) {
      failedIds.add(row.id);
      deps.logger?.warn('customer metrics failed; event left for the next sweep', { event_id: row.id, error: err });
    }
  });
  if (metricIds.length) {
    await pool.query(
      `update events e set customer_metrics = v.m
         from (select unnest($1::text[]) as id, unnest($2::jsonb[]) as m) v
        where e.id = v.id and e.customer_metrics is null`,
      [metricIds, metricValues],
    );
  }

  const tMetrics = lap();
  const planned: { eventId: string; request: WorkflowStartRequest; consumer: EventConsumer }[] = [];
  await mapLimit(rows, PLAN_CONCURRENCY, async (row) => {
    if (failedIds.has(row.id)) return;
    deps.heartbeat?.();
    const event: OutboxEvent = {
      id: row.id, type: row.type, accountId: row.account_id, livemode: row.livemode, customerId: row.customer_id,
      requestId: row.request_id, data: row.data, createdAt: new Date(row.created_at),
    };
    for (const consumer of deps.consumers) {
      try {
        for (const request of await consumer.plan(event, emFor(row))) planned.push({ eventId: row.id, request, consumer });
      } catch (err) {
        failedIds.add(row.id);
        deps.logger?.warn('event consumer failed to plan; event left for the next sweep', { event_id: row.id, consumer: consumer.name, error: err });
      }
    }
  });

  const tPlan = lap();
  const toStart = await runFirstSteps(deps, planned, failedIds);

  const tFirst = lap();
  let started = 0;
  let alreadyStarted = 0;
  await mapLimit(toStart, START_CONCURRENCY, async ({ eventId, request }) => {
    if (failedIds.has(eventId)) return;
    deps.heartbeat?.();
    try {
      await deps.temporal.workflow.start(request.workflowType, {
        workflowId: request.workflowId,
        taskQueue: deps.taskQueue(request.area),
        args: request.args,
        typedSearchAttributes: request.searchAttributes,
        workflowTaskTimeout: deps.workflowTaskTimeoutMs,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        // When this process's worker polls the target queue, its first workflow task comes back
        // with the start (no trip through the task queue); otherwise the server dispatches as usual.
        requestEagerStart: true,
      });
      started++;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        alreadyStarted++;
        return;
      }
      failedIds.add(eventId);
      deps.logger?.warn('workflow start failed; event left for the next sweep', {
        event_id: eventId, workflow_id: request.workflowId, error: err, cause: (err as Error).cause,
      });
    }
  });

  const tStart = lap();
  const dispatched = rows.map((r) => r.id).filter((id) => !failedIds.has(id));
  if (dispatched.length) {
    await pool.query(`update events set dispatched_at = now() where id = any($1::text[]) and dispatched_at is null`, [dispatched]);
  }
  deps.logger?.debug('dispatched events', {
    events: rows.length, planned: planned.length, starts: toStart.length, metrics_ms: tMetrics, plan_ms: tPlan - tMetrics,
    first_steps_ms: tFirst - tPlan, start_ms: tStart - tFirst, total_ms: lap(),
  });
  return {
    events: dispatched.length,
    started,
    alreadyStarted,
    failed: failedIds.size,
    // With failures, let the sweep come back later rather than spin on the same events.
    more: rows.length === batchSize && failedIds.size === 0,
  };
}

/**
 * The consumers' first steps (a webhook's first attempt), made here rather than in a workflow of
 * their own: a burst of events then costs no queue of workflow starts, only the workflows still
 * needed afterwards (retries). A first step that throws (database trouble) leaves its request to be
 * started as planned, so the workflow makes the step itself; nothing is dropped.
 */
async function runFirstSteps<T extends { eventId: string; request: WorkflowStartRequest; consumer: EventConsumer }>(
  deps: DispatchDeps, planned: T[], failedIds: Set<string>,
): Promise<T[]> {
  const services = deps.services;
  if (!services) return planned;
  const ctx: FirstStepContext = { services, heartbeat: () => deps.heartbeat?.() };
  const toStart: T[] = [];
  await mapLimit(planned, FIRST_STEP_CONCURRENCY, async (item) => {
    if (failedIds.has(item.eventId)) return;
    if (!item.consumer.firstStep) {
      toStart.push(item);
      return;
    }
    deps.heartbeat?.();
    try {
      const rest = await item.consumer.firstStep(item.request, ctx);
      if (rest) toStart.push({ ...item, request: rest });
    } catch (err) {
      deps.logger?.warn('first step failed; its workflow will make it', { event_id: item.eventId, workflow_id: item.request.workflowId, error: err });
      toStart.push(item);
    }
  });
  return toStart;
}
