/** What other areas may use of billing. */
export { paidInvoiceTotals } from './revenue.ts';
/** A test clock of the caller's account (404 otherwise): communications reads its frozen time as "now". */
export { findTestClock } from './service.ts';
