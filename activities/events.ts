import type { MikroORM } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { eventConsumers } from '../domain/events/consumers-registry.ts';
import { dispatchPendingEvents } from '../domain/events/dispatch.ts';
import type { Logger } from '../platform/logger.ts';
import type { QueueArea } from '../platform/temporal.ts';
import type { DispatchBatchResult } from '../workflows/webhooks/shared.ts';

export interface EventActivityDeps {
  orm: MikroORM;
  /** The dispatcher starts consumers' workflows. */
  temporal: Client;
  taskQueue(area: QueueArea): string;
  logger?: Logger;
}

/** The outbox dispatcher's activity (runs on the webhooks task queue). */
export function createEventActivities(deps: EventActivityDeps) {
  return {
    async dispatchPendingEvents(input: { batchSize: number }): Promise<DispatchBatchResult> {
      const ctx = Context.current();
      return dispatchPendingEvents({ ...deps, consumers: eventConsumers, heartbeat: () => ctx.heartbeat() }, input.batchSize);
    },
  };
}

export type EventActivities = ReturnType<typeof createEventActivities>;
