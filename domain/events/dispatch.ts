import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Pool } from 'pg';
import { nativePool } from '../../db/pool.ts';
import { every, limiter, mapLimit, type Limiter } from '../../platform/concurrency.ts';
import type { Logger } from '../../platform/logger.ts';
import { eventClaimsLost } from '../../platform/metrics.ts';
import { scopedEm } from '../scope.ts';
import type {
  CustomerMetrics, CustomerMetricsSource, DispatchBatchResult, EventConsumer, FirstStepContext, FirstStepOutcome, OutboxEvent, WorkflowStartRequest,
} from './consumers.ts';

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
  /** The worker's services, for consumers' first steps (see EventConsumer.firstSteps); without them every planned workflow is started. */
  services?: FirstStepContext['services'];
  /**
   * How long the pass's claim on its events lasts (renewed every third of it while the pass runs):
   * a pass lost with its process leaves its events to the next pass after this.
   */
  claimMs: number;
  /**
   * Workflow starts in flight at once, shared by the passes that hold it (a worker process's
   * passes share one); default: `START_CONCURRENCY` for this pass alone.
   */
  startLimit?: Limiter;
  /**
   * Called once the pass has claimed its events, stored their metrics, planned them and made the
   * consumers' first steps (a webhook's first attempt): what is left are workflow starts, which
   * take their turn under `startLimit`. The caller may claim the next events beside them then.
   * `more`: the claim was a full batch.
   */
  planned?: (more: boolean) => void;
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
export const START_CONCURRENCY = 32;
/** Events planned at once (consumers read the database; reads on one scoped EntityManager may overlap). */
const PLAN_CONCURRENCY = 8;

/**
 * One pass over the outbox: reads up to `batchSize` undispatched events (oldest first, across
 * accounts — the dispatcher is the one reader that is not confined to a scope; each consumer
 * plans with an EntityManager scoped to the event's account and mode), stores the customer
 * metrics of events about a customer, starts every planned workflow under its deterministic id
 * (reject-duplicate, so an event seen twice starts nothing twice), and only then marks the events
 * dispatched. The pass first claims its events (see migration 0135): passes in parallel never take
 * one event, and a pass that dies leaves its events to the next pass once its claim has expired.
 * An event whose metrics, planning or start failed stays undispatched too, and is taken again
 * once its claim (no longer renewed) expires.
 */
export async function dispatchPendingEvents(deps: DispatchDeps, batchSize: number): Promise<DispatchBatchResult> {
  const pool = await nativePool(deps.orm);
  const claim = randomUUID();
  // Oldest first; events another pass holds (a live claim, or a row being claimed right now) are
  // skipped, so passes in parallel (in this process, in others, the sweeper's activity) share the
  // outbox without taking one event twice.
  const { rows } = await pool.query<EventRow>(
    `update events e set dispatch_claim = $2, dispatch_claimed_until = clock_timestamp() + $3 * interval '1 millisecond'
       from (select id from events
              where dispatched_at is null and (dispatch_claimed_until is null or dispatch_claimed_until < clock_timestamp())
              order by id limit $1 for no key update skip locked) c
      where e.id = c.id
     returning e.id, e.account_id, e.livemode, e.type, e.data, e.customer_id, e.request_id, e.customer_metrics, e.created_at`,
    [batchSize, claim, deps.claimMs],
  );
  if (rows.length === 0) return { events: 0, started: 0, alreadyStarted: 0, failed: 0, more: false };
  rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  const t0 = performance.now();
  const lap = () => Math.round(performance.now() - t0);
  const failedIds = new Set<string>();
  const renewal = renewClaim(pool, claim, rows.map((r) => r.id), deps, failedIds);
  try {
    return await dispatchClaimed(deps, pool, rows, failedIds, lap, batchSize);
  } finally {
    renewal.stop();
  }
}

/** Event ids named in a claim-loss warning (the count names them all). */
const LOST_IDS_LOGGED = 5;

/**
 * Keeps the pass's claim alive: every third of `claimMs`, the lease of its events still undispatched
 * is extended. An event whose claim was lost meanwhile (the pass stalled past its lease and another
 * pass took the event) is dropped from this pass: nothing more is sent for it from here.
 */
function renewClaim(pool: Pool, claim: string, ids: string[], deps: DispatchDeps, failedIds: Set<string>) {
  let stopped = false;
  const stopRenewing = every(Math.max(100, Math.floor(deps.claimMs / 3)), () => pool.query<{ id: string }>(
    `update events set dispatch_claimed_until = clock_timestamp() + $3 * interval '1 millisecond'
      where id = any($1::text[]) and dispatch_claim = $2 and dispatched_at is null returning id`,
    [ids.filter((id) => !failedIds.has(id)), claim, deps.claimMs],
  ).then(({ rows }) => {
    if (stopped) return; // answered after the pass marked its events dispatched
    const held = new Set(rows.map((r) => r.id));
    const lost = ids.filter((id) => !held.has(id) && !failedIds.has(id));
    if (!lost.length) return;
    for (const id of lost) failedIds.add(id);
    eventClaimsLost.inc(lost.length);
    // One line per renewal, however many: an overloaded dispatcher loses a whole pass at once.
    deps.logger?.warn('event claims lost (the pass outlived its lease); another pass has the events', {
      lost: lost.length, event_ids: lost.slice(0, LOST_IDS_LOGGED), claim_ms: deps.claimMs,
    });
  }).catch((err: unknown) => {
    deps.logger?.warn('could not renew the claim on events being dispatched', { error: err });
  }));
  return {
    stop() {
      stopped = true;
      stopRenewing();
    },
  };
}

async function dispatchClaimed(
  deps: DispatchDeps, pool: Pool, rows: EventRow[], failedIds: Set<string>, lap: () => number, batchSize: number,
): Promise<DispatchBatchResult> {

  const scoped = new Map<string, EntityManager>();
  const emFor = (row: EventRow) => {
    const key = `${row.account_id}:${row.livemode}`;
    let sem = scoped.get(key);
    if (!sem) scoped.set(key, (sem = scopedEm(deps.orm, { accountId: row.account_id, livemode: row.livemode })));
    return sem;
  };

  // Customer metrics first, committed before any delivery can read the event: one call per scope
  // for every customer of the pass (the source reads them all in one statement per table).
  const metricIds: string[] = [];
  const metricValues: string[] = [];
  const needMetrics = new Map<EntityManager, EventRow[]>();
  for (const row of rows) {
    if (!deps.customerMetrics || !row.customer_id || row.customer_metrics) continue;
    const em = emFor(row);
    needMetrics.set(em, [...(needMetrics.get(em) ?? []), row]);
  }
  await mapLimit([...needMetrics], PLAN_CONCURRENCY, async ([em, scoped]) => {
    deps.heartbeat?.();
    try {
      const metrics = await deps.customerMetrics!(em, [...new Set(scoped.map((r) => r.customer_id!))]);
      for (const row of scoped) {
        row.customer_metrics = metrics.get(row.customer_id!)!;
        metricIds.push(row.id);
        metricValues.push(JSON.stringify(row.customer_metrics));
      }
    } catch (err) {
      for (const row of scoped) failedIds.add(row.id);
      deps.logger?.warn('customer metrics failed; events left for the next pass', { event_ids: scoped.map((r) => r.id), error: err });
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
  deps.planned?.(rows.length === batchSize && failedIds.size === 0);
  let started = 0;
  let alreadyStarted = 0;
  const startLimit = deps.startLimit ?? limiter(START_CONCURRENCY);
  await Promise.all(toStart.map(({ eventId, request }) => startLimit(async () => {
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
  })));

  const tStart = lap();
  const dispatched = rows.map((r) => r.id).filter((id) => !failedIds.has(id));
  if (dispatched.length) {
    await pool.query(
      `update events set dispatched_at = now(), dispatch_claim = null, dispatch_claimed_until = null
        where id = any($1::text[]) and dispatched_at is null`,
      [dispatched],
    );
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
 * needed afterwards (retries). Each consumer gets all its requests of the pass at once (it may
 * batch its reads and writes). A first step that fails (database trouble) leaves its request to be
 * started as planned, so the workflow makes the step itself; nothing is dropped.
 */
async function runFirstSteps<T extends { eventId: string; request: WorkflowStartRequest; consumer: EventConsumer }>(
  deps: DispatchDeps, planned: T[], failedIds: Set<string>,
): Promise<T[]> {
  const services = deps.services;
  if (!services) return planned;
  const eventOf = new Map(planned.map((item) => [item.request, item.eventId]));
  const ctx: FirstStepContext = {
    services, heartbeat: () => deps.heartbeat?.(), dropped: (request) => failedIds.has(eventOf.get(request) ?? ''),
  };
  const toStart: T[] = [];
  const byConsumer = new Map<EventConsumer, T[]>();
  for (const item of planned) {
    if (failedIds.has(item.eventId)) continue;
    if (!item.consumer.firstSteps) toStart.push(item);
    else byConsumer.set(item.consumer, [...(byConsumer.get(item.consumer) ?? []), item]);
  }
  await Promise.all([...byConsumer].map(async ([consumer, items]) => {
    deps.heartbeat?.();
    let outcomes: FirstStepOutcome[];
    try {
      outcomes = await consumer.firstSteps!(items.map((item) => item.request), ctx);
    } catch (err) {
      outcomes = items.map(() => ({ error: err }));
    }
    items.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if ('error' in outcome) {
        deps.logger?.warn('first step failed; its workflow will make it', { event_id: item.eventId, workflow_id: item.request.workflowId, error: outcome.error });
        toStart.push(item);
      } else if (outcome.rest) {
        toStart.push({ ...item, request: outcome.rest });
      }
    });
  }));
  return toStart;
}

/**
 * In how many milliseconds the earliest live claim on an undispatched event expires, or null when
 * no undispatched event is claimed. A process whose passes have gone idle runs one more then: the
 * events of a pass lost with its process are taken again without waiting for the sweep.
 */
export async function nextClaimExpiryMs(orm: MikroORM): Promise<number | null> {
  const { rows: [row] } = await (await nativePool(orm)).query<{ ms: number | null }>(
    `select (extract(epoch from min(dispatch_claimed_until) - clock_timestamp()) * 1000)::float8 as ms
       from events where dispatched_at is null and dispatch_claimed_until is not null`,
  );
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Math.ceil(Number(row.ms)));
}
