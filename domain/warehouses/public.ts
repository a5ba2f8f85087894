/**
 * What other areas may use of warehouses: stock movements through the ledger (procurement
 * receipts, returns, scrap). See docs/warehouses.md.
 */
export { recordStockMovement, type StockMovementContext, type StockMovementLine } from './movements.ts';
/** The realtime stock feed of this process (GraphQL's inventoryChanged subscription) and its change's schema. */
export { realtimeHubOf, type InventoryRealtime } from './realtime.ts';
export { stockChangeSchema, type StockChangeView } from './schemas.ts';
