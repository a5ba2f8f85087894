import { createCommerceActivities } from '../../activities/commerce/index.ts';
import { catalogRoutes } from '../../api/v3/commerce/catalog.ts';
import { inventoryRoutes } from '../../api/v3/commerce/inventory.ts';
import { marketplaceRoutes } from '../../api/v3/commerce/marketplace.ts';
import { orderRoutes } from '../../api/v3/commerce/orders.ts';
import { reportRoutes } from '../../api/v3/commerce/reports.ts';
import { storeRoutes } from '../../api/v3/commerce/stores.ts';
import { Migration0002CommerceCrm } from '../../db/migrations/0002-commerce-crm.ts';
import { Migration0010OrderPaymentUnique } from '../../db/migrations/0010-order-payment-unique.ts';
import { Migration0167ProductsSearch } from '../../db/migrations/0167-products-search.ts';
import { Migration0169CommerceListingsBySku } from '../../db/migrations/0169-commerce-listings-by-sku.ts';
import { Migration0171CommerceOrdersByStatus } from '../../db/migrations/0171-commerce-orders-by-status.ts';
import { defineArea } from '../../platform/area.ts';
import { InventoryLevel, MarketplaceListing, Order, Product, Store, Warehouse } from './entities.ts';
import { commerceEvents } from './events.ts';
import { orderWorkflowConsumer } from './order-process.ts';

/** Commerce: stores, products and catalog, warehouses and stock, orders (one workflow each), reports, marketplaces. */
export const commerceArea = defineArea({
  name: 'commerce',
  permissions: ['commerce', 'warehouses'],
  routes: [...storeRoutes, ...catalogRoutes, ...inventoryRoutes, ...orderRoutes, ...reportRoutes, ...marketplaceRoutes],
  workflows: new URL('../../workflows/commerce/index.ts', import.meta.url),
  activities: createCommerceActivities,
  entities: [Store, Product, Warehouse, InventoryLevel, Order, MarketplaceListing],
  // One migration for commerce and CRM tables, from before areas were declared apart.
  migrations: [
    { name: '0002-commerce-crm', class: Migration0002CommerceCrm },
    { name: '0010-order-payment-unique', class: Migration0010OrderPaymentUnique },
    { name: '0167-products-search', class: Migration0167ProductsSearch },
    { name: '0169-commerce-listings-by-sku', class: Migration0169CommerceListingsBySku },
    { name: '0171-commerce-orders-by-status', class: Migration0171CommerceOrdersByStatus },
  ],
  events: commerceEvents,
  consumers: [orderWorkflowConsumer],
});
