import { createAnalyticsActivities } from '../../activities/analytics/index.ts';
import { analyticsAdminRouter } from '../../api/admin/analytics/router.ts';
import { analyticsRoutes } from '../../api/v3/analytics/routes.ts';
import { Migration0070Analytics } from '../../db/migrations/0070-analytics.ts';
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
  migrations: [{ name: '0070-analytics', class: Migration0070Analytics }],
  events: analyticsEvents,
  admin: { analytics: analyticsAdminRouter },
  // Rollups refreshed to the last quarter hour; report files past retention deleted.
  schedules: [{
    id: ANALYTICS_MAINTENANCE_SCHEDULE_ID, every: '15m', workflowType: 'analyticsMaintenanceWorkflow',
    workflowId: ANALYTICS_MAINTENANCE_WORKFLOW_ID, args: [{ refreshRollups: true, purgeReports: true } satisfies MaintenanceInput],
  }],
});
