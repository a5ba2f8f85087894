import { createAnalyticsActivities } from '../../activities/analytics/index.ts';
import { analyticsAdminRouter } from '../../api/admin/analytics/router.ts';
import { analyticsRoutes } from '../../api/v3/analytics/routes.ts';
import { signedDownloadPages } from '../../api/v3/analytics/signed-download.ts';
import { Migration0070Analytics } from '../../db/migrations/0070-analytics.ts';
import { Migration0071AnalyticsLedgerRevenue } from '../../db/migrations/0071-analytics-ledger-revenue.ts';
import { Migration0072AnalyticsAreaKpis } from '../../db/migrations/0072-analytics-area-kpis.ts';
import { Migration0073AnalyticsPlanHistory } from '../../db/migrations/0073-analytics-plan-history.ts';
import { defineArea } from '../../platform/area.ts';
import { ANALYTICS_MAINTENANCE_SCHEDULE_ID, ANALYTICS_MAINTENANCE_WORKFLOW_ID, type MaintenanceInput } from '../../workflows/analytics/shared.ts';
import { AnalyticsReport } from './entities.ts';
import { analyticsEvents } from './events.ts';

/**
 * Analytics: revenue, KPIs and forecasts from SQL aggregates over its own views of the other
 * areas' tables, and report generation (PDF, Excel, CSV, JSON), one workflow per report.
 */
export const analyticsArea = defineArea({
  name: 'analytics',
  permissions: ['analytics'],
  routes: analyticsRoutes,
  workflows: new URL('../../workflows/analytics/index.ts', import.meta.url),
  activities: createAnalyticsActivities,
  entities: [AnalyticsReport],
  migrations: [
    { name: '0070-analytics', class: Migration0070Analytics },
    { name: '0071-analytics-ledger-revenue', class: Migration0071AnalyticsLedgerRevenue },
    { name: '0072-analytics-area-kpis', class: Migration0072AnalyticsAreaKpis },
    { name: '0073-analytics-plan-history', class: Migration0073AnalyticsPlanHistory },
  ],
  events: analyticsEvents,
  admin: { analytics: analyticsAdminRouter },
  // The key-less signed download_url (/files/reports/{id}).
  pages: signedDownloadPages,
  // Rollups refreshed to the last quarter hour; report files past retention deleted.
  schedules: [{
    id: ANALYTICS_MAINTENANCE_SCHEDULE_ID, every: '15m', workflowType: 'analyticsMaintenanceWorkflow',
    workflowId: ANALYTICS_MAINTENANCE_WORKFLOW_ID, args: [{ refreshRollups: true, purgeReports: true } satisfies MaintenanceInput],
  }],
});
