/**
 * What crosses the layers for the analytics area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import { defineQuery, defineUpdate, type ActivityOptions } from '@temporalio/workflow';
import type { ReportFilters, ReportFormat, ReportStatus, ReportType, ReportView } from '../../domain/analytics/schemas.ts';
import { REFUSAL_TYPES } from '../kit/failures.ts';
import { workflowIds } from '../kit/ids.ts';

export type { ReportView };

/** `report-rpt_…`. */
export const reportWorkflowIds = workflowIds('report');
export const reportWorkflowId = reportWorkflowIds.id;

/** The scheduled maintenance: rollup refresh and report retention (one per deployment prefix). */
export const ANALYTICS_MAINTENANCE_SCHEDULE_ID = 'analytics-maintenance';
export const ANALYTICS_MAINTENANCE_WORKFLOW_ID = 'analytics-maintenance';

export interface ReportWorkflowInput {
  reportId: string;
  accountId: string;
  livemode: boolean;
  reportType: ReportType;
  format: ReportFormat;
  start: string;
  end: string;
  timezone: string;
  currency: string | null;
  filters: ReportFilters;
  requestIdempotencyKey: string | null;
  requestId: string | null;
  /** 1 for the first run; an admin re-run starts the same workflow id again with the next number. */
  run: number;
}

export interface ReportRef {
  reportId: string;
  accountId: string;
  livemode: boolean;
  requestId: string | null;
}

export interface RenderedFile {
  fileName: string;
  size: number;
  rows: number;
  contentType: string;
}

export interface ReportLiveState {
  reportId: string;
  run: number;
  phase: 'creating' | 'rendering' | 'finishing' | 'done';
  status: ReportStatus | null;
  cancelRequested: boolean;
  cancelReason: string | null;
}

/** Answers once the report's row is written (update-with-start). */
export const reportRecordedUpdate = defineUpdate<ReportView, []>('reportRecorded');
/** Stops a queued or running report; refused (409) once it finished. */
export const cancelReportUpdate = defineUpdate<ReportView, [{ reason: string | null; requestId: string | null }]>('cancelReport');
export const reportStateQuery = defineQuery<ReportLiveState>('reportState');

export interface MaintenanceInput {
  /** Refresh every account's revenue rollup. */
  refreshRollups: boolean;
  /** Delete report files whose retention ended. */
  purgeReports: boolean;
}

export interface MaintenanceResult {
  rollupsRefreshed: number;
  reportFilesDeleted: number;
}

/** Database steps: short, retried a few times. */
export const DB_STEPS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 10, nonRetryableErrorTypes: [...REFUSAL_TYPES] },
};

/**
 * Rendering: long, heartbeating every page of rows, so a worker that dies is noticed within the
 * heartbeat timeout and the render restarts elsewhere (into a fresh part file, see the activity).
 */
export const RENDER_STEP: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  // Short: heartbeats are throttled to 80 % of it, and a cancel reaches the activity with a heartbeat.
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '2s', maximumInterval: '30s', maximumAttempts: 5, nonRetryableErrorTypes: [...REFUSAL_TYPES] },
};
