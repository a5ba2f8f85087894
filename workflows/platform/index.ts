/** The platform area's workflows (the worker bundles every area's workflows module). */
export { housekeepingWorkflow } from './housekeeping.ts';
export { eventDispatcherWorkflow } from './event-dispatcher.ts';
