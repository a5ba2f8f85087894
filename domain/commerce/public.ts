/** What other areas may use of commerce: orders (for the CRM journey), prices in other currencies, stock. */
export { Order, Warehouse, type OrderLine } from './entities.ts';
export { loadRates, priceIn } from './pricing.ts';
export { applyStockChanges, moveStock, setStockContext, MAX_STOCK, type MovedLevel, type StockContext, type StockDelta } from './inventory.ts';
