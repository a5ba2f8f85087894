/**
 * What other areas may use of commerce: orders (for the CRM journey and shipping), products and
 * warehouses, prices in other currencies, and stock (warehouses' movements ledger; the ERP area's
 * purchase-order receipts add stock through it).
 */
export { Order, Product, Warehouse, type OrderLine } from './entities.ts';
export { loadRates, priceIn } from './pricing.ts';
export { findOrder, orderView, type OrderView } from './orders.ts';
export {
  applyStockChanges, moveStock, setStockContext, MAX_STOCK,
  type MovedLevel, type StockChange, type StockContext, type StockDelta,
} from './inventory.ts';
