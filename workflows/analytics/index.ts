/** The analytics area's workflows (the worker bundles every area's workflows module). */
export { reportWorkflow } from './report.ts';
export { analyticsMaintenanceWorkflow } from './maintenance.ts';
