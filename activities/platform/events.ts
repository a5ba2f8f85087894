import { Context } from '@temporalio/activity';
import { dispatchPendingEvents, type DispatchDeps } from '../../domain/events/dispatch.ts';
import type { ActivityDeps } from '../../platform/area.ts';
import type { DispatchBatchResult } from '../../workflows/platform/shared.ts';

/** Every service: consumers' first steps (a webhook's first attempt) run with the areas' services. */
export type EventActivityDeps = ActivityDeps;

/**
 * What a dispatcher pass needs from a worker's dependencies: the sweep below and the passes every
 * worker process runs when events commit (worker/worker.ts) are the same pass.
 */
export function dispatchDepsOf(deps: EventActivityDeps, pass: Pick<DispatchDeps, 'claimMs' | 'heartbeat' | 'startLimit' | 'planned'>): DispatchDeps {
  return {
    orm: deps.orm, temporal: deps.temporal, taskQueue: deps.taskQueue, logger: deps.logger,
    consumers: deps.eventConsumers, customerMetrics: deps.customerMetrics,
    workflowTaskTimeoutMs: deps.config.EVENT_WORKFLOW_TASK_TIMEOUT_MS, services: deps, ...pass,
  };
}

/** The outbox dispatcher workflow's sweep (runs on the platform task queue). */
export function createEventActivities(deps: EventActivityDeps) {
  return {
    async dispatchPendingEvents(input: { batchSize: number }): Promise<DispatchBatchResult> {
      const ctx = Context.current();
      const result = await dispatchPendingEvents(
        dispatchDepsOf(deps, { heartbeat: () => ctx.heartbeat(), claimMs: ctx.info.heartbeatTimeoutMs || 20_000 }), input.batchSize);
      // Most events are dispatched by the worker processes' own passes as they commit; the sweep
      // finds what they left (a lost notification, a pass lost with its process).
      deps.logger.debug('outbox swept', { events: result.events, failed: result.failed });
      return result;
    },
  };
}

export type EventActivities = ReturnType<typeof createEventActivities>;
