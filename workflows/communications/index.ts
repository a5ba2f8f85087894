/** The communications area's workflows. */
export { callWorkflow } from './call.ts';
export { messageWorkflow } from './message.ts';
