import { Migration0095DashboardRequestProblems } from '../../db/migrations/0095-dashboard-request-problems.ts';
import { defineArea } from '../../platform/area.ts';
import { mountDashboard } from './pages.ts';

/**
 * The developer dashboard (docs/dashboard.md): the web app in dashboard/, built into dist/dashboard and
 * served at /dashboard with its tRPC API at /dashboard/trpc. It owns no tables; it reads the
 * platform's (keys, request log) and other areas' through their public modules.
 */
export const dashboardArea = defineArea({
  name: 'dashboard',
  permissions: [],
  migrations: [{ name: '0095-dashboard-request-problems', class: Migration0095DashboardRequestProblems }],
  pages: { prefixes: ['/dashboard'], mount: mountDashboard },
});
