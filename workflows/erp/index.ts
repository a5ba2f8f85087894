/** The ERP area's workflows. */
export { ledgerPostingWorkflow } from './ledger-posting.ts';
export { procurementOrderWorkflow } from './procurement-order.ts';
