import { createCrmActivities } from '../../activities/crm/index.ts';
import { crmAdminRouter } from '../../api/admin/crm/router.ts';
import { crmRoutes } from '../../api/v3/crm/routes.ts';
import { segmentRoutes } from '../../api/v3/crm/segments.ts';
import { Migration0080CrmSegments } from '../../db/migrations/0080-crm-segments.ts';
import { defineArea } from '../../platform/area.ts';
import { crmAutomationConsumer } from './automation.ts';
import { AutomationRule, AutomationRun, CrmMessage, CrmTask, Interaction, Segment, Touchpoint } from './entities.ts';
import { crmEvents } from './events.ts';
import { customerMetricsOf } from './metrics.ts';
import { segmentMembershipConsumer } from './segments.ts';

/** CRM: the customer journey (LTV, engagement, lifecycle), interactions, touchpoints, automation rules and tasks, segments. */
export const crmArea = defineArea({
  name: 'crm',
  permissions: ['crm'],
  routes: (ctx) => [...crmRoutes(ctx), ...segmentRoutes],
  workflows: new URL('../../workflows/crm/index.ts', import.meta.url),
  activities: createCrmActivities,
  entities: [Interaction, Touchpoint, AutomationRule, AutomationRun, CrmTask, CrmMessage, Segment],
  migrations: [{ name: '0080-crm-segments', class: Migration0080CrmSegments }],
  events: crmEvents,
  consumers: [crmAutomationConsumer, segmentMembershipConsumer],
  customerMetrics: customerMetricsOf,
  admin: { crm: crmAdminRouter },
});
