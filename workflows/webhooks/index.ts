/** The webhooks area's workflows. */
export { webhookDeliveryWorkflow } from './delivery.ts';
