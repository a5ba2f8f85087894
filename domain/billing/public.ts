/** What other areas may use of billing. */
export { paidInvoiceTotals } from './revenue.ts';
