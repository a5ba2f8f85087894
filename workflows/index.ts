/** The only `workflowsPath`: every workflow the worker runs is exported here. */
export { housekeepingWorkflow } from './platform/housekeeping.ts';
export { orderWorkflow } from './commerce/order.ts';
export { crmAutomationWorkflow } from './crm/automation.ts';
export { paymentWorkflow } from './payments/payment.ts';
export { refundWorkflow } from './payments/refund.ts';
export { paymentsBaselineWorkflow } from './payments/baseline.ts';
export { webhookDeliveryWorkflow } from './webhooks/delivery.ts';
export { eventDispatcherWorkflow } from './webhooks/event-dispatcher.ts';
export { subscriptionWorkflow } from './billing/subscription.ts';
