import { createShippingActivities } from '../../activities/shipping/index.ts';
import { shippingAdminRouter } from '../../api/admin/shipping/router.ts';
import { shippingRoutes } from '../../api/v3/shipping/routes.ts';
import { Migration0020Shipping } from '../../db/migrations/0020-shipping.ts';
import { Migration0173ShippingShipmentsByStatus } from '../../db/migrations/0173-shipping-shipments-by-status.ts';
import { defineArea } from '../../platform/area.ts';
import { createCarrierAdapters, type CarrierAdapters } from './carriers/index.ts';
import { loadShippingConfig } from './config.ts';
import { Shipment, ShippingCarrierSetting, ShippingPickup, ShippingTestClock } from './entities.ts';
import { shippingEvents } from './events.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** The carrier adapters (sandbox carriers, EasyPost when configured), built once per process. */
    carriers: CarrierAdapters;
  }
}

/** Shipping: shipments over carrier adapters (one workflow each), rates and comparisons, pickups, tracking pushes. */
export const shippingArea = defineArea({
  name: 'shipping',
  permissions: ['shipping'],
  routes: shippingRoutes,
  workflows: new URL('../../workflows/shipping/index.ts', import.meta.url),
  activities: createShippingActivities,
  entities: [Shipment, ShippingPickup, ShippingTestClock, ShippingCarrierSetting],
  migrations: [
    { name: '0020-shipping', class: Migration0020Shipping },
    { name: '0173-shipping-shipments-by-status', class: Migration0173ShippingShipmentsByStatus },
  ],
  events: shippingEvents,
  services: ({ logger }) => {
    const config = loadShippingConfig();
    if (config.SHIPPING_LIVE_SANDBOX) logger.warn('SHIPPING_LIVE_SANDBOX=true: live-mode shipments may use the sandbox carriers. Development only.', { setting: 'SHIPPING_LIVE_SANDBOX' });
    return { carriers: createCarrierAdapters(config) };
  },
  admin: { shipping: shippingAdminRouter },
});
