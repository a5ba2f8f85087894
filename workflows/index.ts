/** The only `workflowsPath`: every workflow the worker runs is exported here. */
export { housekeepingWorkflow } from './platform/housekeeping.ts';
export { webhookDeliveryWorkflow } from './webhooks/delivery.ts';
export { eventDispatcherWorkflow } from './webhooks/event-dispatcher.ts';
export { paymentWorkflow } from './payments/payment.ts';
export { refundWorkflow } from './payments/refund.ts';
