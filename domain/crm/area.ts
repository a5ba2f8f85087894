import { createCrmActivities } from '../../activities/crm/index.ts';
import { crmRoutes } from '../../api/v3/crm/routes.ts';
import { defineArea } from '../../platform/area.ts';
import { crmAutomationConsumer } from './automation.ts';
import { AutomationRule, AutomationRun, CrmMessage, CrmTask, Interaction, Touchpoint } from './entities.ts';
import { customerMetrics } from './metrics.ts';

/** CRM: the customer journey (LTV, engagement, lifecycle), interactions, touchpoints, automation rules and tasks. */
export const crmArea = defineArea({
  name: 'crm',
  permissions: ['crm'],
  routes: crmRoutes,
  workflows: new URL('../../workflows/crm/index.ts', import.meta.url),
  activities: createCrmActivities,
  entities: [Interaction, Touchpoint, AutomationRule, AutomationRun, CrmTask, CrmMessage],
  consumers: [crmAutomationConsumer],
  customerMetrics,
});
