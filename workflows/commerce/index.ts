/** The commerce area's workflows. */
export { orderWorkflow } from './order.ts';
