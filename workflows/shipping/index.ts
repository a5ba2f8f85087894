/** The shipping area's workflows. */
export { shipmentWorkflow } from './shipment.ts';
