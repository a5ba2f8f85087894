/** What other areas may use of commerce: orders (for the CRM journey and shipping), products and warehouses, and prices in other currencies. */
export { Order, Product, Warehouse } from './entities.ts';
export { loadRates, priceIn } from './pricing.ts';
export { findOrder, orderView, type OrderView } from './orders.ts';
/** Stock operations (the ERP area's purchase-order receipts add stock through them). */
export { applyStockChanges, type StockChange } from './inventory.ts';
