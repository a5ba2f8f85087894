/** The only `workflowsPath`: every workflow the worker runs is exported here. */
export { housekeepingWorkflow } from './platform/housekeeping.ts';
export { paymentWorkflow } from './payments/payment.ts';
export { refundWorkflow } from './payments/refund.ts';
