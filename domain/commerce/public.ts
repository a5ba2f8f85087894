/**
 * What other areas may use of commerce: orders (for the CRM journey and shipping), products and
 * warehouses, prices in other currencies, and stock (warehouses' movements ledger; the ERP area's
 * purchase-order receipts add stock through it).
 */
export { Order, Product, Warehouse, type OrderLine } from './entities.ts';
export { loadRates, priceIn } from './pricing.ts';
export { findOrder, orderView, recordShortPick, type OrderView, type ShortPickedUnits } from './orders.ts';
export {
  applyStockChanges, moveStock, setStockContext, MAX_STOCK,
  type MovedLevel, type StockChange, type StockContext, type StockDelta,
} from './inventory.ts';
/** Read-only lists of orders and a SKU's stock (the /v3/ai tools read through them). */
export { listOrders, type OrderFilters } from './orders.ts';
export { getStock, lowStockLevels } from './inventory.ts';
/** Batch reads for GraphQL's loaders (many customers' orders, orders by many ids), the order schema and its status groups. */
export { ordersOfCustomers, ordersByIds, statusesOf } from './orders.ts';
export { orderSchema } from './schemas.ts';
/** Products and stock levels for GraphQL: the product schema, lists and batch reads. */
export { listProducts, productsByIds, type ProductFilters } from './catalog.ts';
export { stockOfSkus } from './inventory.ts';
export { productSchema, inventoryLevelSchema, type ProductView, type InventoryLevelView } from './schemas.ts';
/** Placing an order (POST /v3/orders and GraphQL's createOrder): the request schema and the service. */
export { createOrderBody } from './requests.ts';
export { placeOrder } from './order-process.ts';
/** An order's workflow for the shipping area's updates, started first if the dispatcher has not yet. */
export { withOrderWorkflow } from './order-process.ts';
