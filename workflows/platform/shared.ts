import { defineSignal } from '@temporalio/workflow';
import type { DispatchBatchResult } from '../../domain/events/consumers.ts';

export type { DispatchBatchResult };

/**
 * What crosses the layers for the platform area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
export const HOUSEKEEPING_SCHEDULE_ID = 'platform-housekeeping';
export const HOUSEKEEPING_WORKFLOW_ID = 'platform-housekeeping';

export interface HousekeepingInput {
  /** Request log rows older than this are deleted. */
  requestLogRetentionDays: number;
}

export interface HousekeepingResult {
  idempotencyRecords: number;
  rateLimitWindows: number;
  requestLogs: number;
}

/** One dispatcher per deployment (per task-queue prefix, so test files sharing a server each have theirs). */
export function dispatcherWorkflowId(taskQueuePrefix: string): string {
  return `${taskQueuePrefix}event-dispatcher`;
}

export interface DispatcherInput {
  /** How long the dispatcher waits for a nudge before sweeping the outbox anyway. */
  sweepMs: number;
  batchSize: number;
  /**
   * Heartbeat timeout of its activity: a worker lost mid-pass (in the middle of a webhook's first
   * attempt) is noticed after this, and the pass runs again elsewhere. Default 20 s (runs started
   * before it existed).
   */
  heartbeatTimeoutMs?: number;
}


/** A transaction that wrote events has committed: dispatch now rather than at the next sweep. */
export const nudgeDispatcherSignal = defineSignal('nudge');
