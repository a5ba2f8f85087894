import { createWarehouseActivities } from '../../activities/warehouses/index.ts';
import { warehousesAdminRouter } from '../../api/admin/warehouses/router.ts';
import { warehouseRoutes } from '../../api/v3/warehouses/routes.ts';
import { Migration0030Warehouses } from '../../db/migrations/0030-warehouses.ts';
import { Migration0160WarehousesStockSequencer } from '../../db/migrations/0160-warehouses-stock-sequencer.ts';
import { defineArea } from '../../platform/area.ts';
import { warehouseEvents } from './events.ts';
import { InventoryRealtime, registerHub } from './realtime.ts';

/**
 * Warehouses: inventory per warehouse with alerts, the movements ledger, pick lists with optimised
 * routes, transfers and cycle counts (one workflow each) and the realtime inventory WebSocket. Stock
 * itself is the commerce area's (`inventory_levels`), changed through its stock functions.
 */
export const warehousesArea = defineArea({
  name: 'warehouses',
  // warehouses:read|write (also declared by commerce, whose warehouse routes predate this area);
  // inventory_approvals:write approves cycle-count variances beyond tolerance.
  permissions: ['warehouses', 'inventory_approvals'],
  routes: warehouseRoutes,
  workflows: new URL('../../workflows/warehouses/index.ts', import.meta.url),
  activities: createWarehouseActivities,
  migrations: [
    { name: '0030-warehouses', class: Migration0030Warehouses },
    { name: '0160-warehouses-stock-sequencer', class: Migration0160WarehousesStockSequencer },
  ],
  events: warehouseEvents,
  admin: { warehouses: warehousesAdminRouter },
  httpServer: (server, deps) => {
    const hub = new InventoryRealtime({
      pool: deps.pool,
      logger: deps.logger,
      admitKey: (hash) => deps.concurrency.admit(hash, deps.config),
      releaseKey: (keyId) => {
        deps.concurrency.started(keyId);
        void deps.concurrency.finished(keyId);
      },
    });
    hub.attach(server);
    registerHub(deps, hub);
    return hub;
  },
});
