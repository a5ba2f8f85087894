export { loyaltyWorkflow } from './loyalty.ts';
export { loyaltyOrderEventWorkflow } from './order-event.ts';
