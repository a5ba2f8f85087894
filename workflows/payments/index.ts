/** The payments area's workflows. */
export { paymentWorkflow } from './payment.ts';
export { refundWorkflow } from './refund.ts';
