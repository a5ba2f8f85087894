/**
 * What other areas may use of warehouses: stock movements through the ledger (procurement
 * receipts, returns, scrap). See docs/warehouses.md.
 */
export { recordStockMovement, type StockMovementContext, type StockMovementLine } from './movements.ts';
