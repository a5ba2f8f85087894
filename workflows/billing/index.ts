/** The billing area's workflows. */
export { subscriptionWorkflow } from './subscription.ts';
