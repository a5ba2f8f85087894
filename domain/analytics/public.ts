/**
 * What other areas may use of analytics: the query layer's local-day windows and the orders per
 * local day (GET /v3/reports/sales-summary in commerce reads them, so both cut days the same way).
 */
export { assertTimeZone, type DateWindow } from './periods.ts';
export { ordersByDay, type OrdersDay } from './queries.ts';
