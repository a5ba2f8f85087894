import { proxyActivities } from '@temporalio/workflow';
import type { AnalyticsActivities } from '../../activities/analytics/index.ts';
import type { MaintenanceInput, MaintenanceResult } from './shared.ts';

const { refreshAllRollups, purgeExpiredReports } = proxyActivities<AnalyticsActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '5s', maximumAttempts: 5 },
});

/**
 * Runs on a Temporal Schedule (every 15 minutes, worker/schedules.ts): refreshes the revenue
 * rollups up to the last whole quarter hour, and deletes report files whose retention ended.
 */
export async function analyticsMaintenanceWorkflow(input: MaintenanceInput): Promise<MaintenanceResult> {
  const rollupsRefreshed = input.refreshRollups ? await refreshAllRollups() : 0;
  const reportFilesDeleted = input.purgeReports ? await purgeExpiredReports({ now: null }) : 0;
  return { rollupsRefreshed, reportFilesDeleted };
}
