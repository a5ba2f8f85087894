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
