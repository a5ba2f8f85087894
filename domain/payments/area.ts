import { createPaymentActivities } from '../../activities/payments/index.ts';
import { paymentsAdminRouter } from '../../api/admin/payments/router.ts';
import { paymentRoutes } from '../../api/v3/payments/routes.ts';
import { routingRoutes } from '../../api/v3/payments/routing.ts';
import { nativePool } from '../../db/pool.ts';
import { Migration0004Payments } from '../../db/migrations/0004-payments.ts';
import { Migration0012PaymentsSplitFunding } from '../../db/migrations/0012-payments-split-funding.ts';
import { Migration0082PaymentsGatewayRouting } from '../../db/migrations/0082-payments-gateway-routing.ts';
import { Migration0163PaymentsByCustomer } from '../../db/migrations/0163-payments-by-customer.ts';
import { defineArea } from '../../platform/area.ts';
import { Payment, PaymentGatewaySetting, PaymentRefund, PaymentRoutingRule, PaymentTransfer } from './entities.ts';
import { paymentEvents } from './events.ts';
import type { SavedCards } from './process.ts';
import { createPaymentGateways, type PaymentGateways } from './gateways/index.ts';

declare module '../../platform/services.ts' {
  interface AreaServices {
    /** The payment gateways (sandbox, Stripe), built once per process. */
    paymentGateways: PaymentGateways;
    /** Customers' default saved cards, for marketplace splits without a payment_method (billing provides it). */
    savedCards?: SavedCards;
  }
}

/** Payments: charges, refunds and marketplace splits through gateway adapters, one workflow per payment. */
export const paymentsArea = defineArea({
  name: 'payments',
  permissions: ['payments'],
  routes: [...paymentRoutes, ...routingRoutes],
  workflows: new URL('../../workflows/payments/index.ts', import.meta.url),
  activities: createPaymentActivities,
  entities: [Payment, PaymentRefund, PaymentTransfer, PaymentGatewaySetting, PaymentRoutingRule],
  migrations: [
    { name: '0004-payments', class: Migration0004Payments },
    { name: '0012-payments-split-funding', class: Migration0012PaymentsSplitFunding },
    { name: '0082-payments-gateway-routing', class: Migration0082PaymentsGatewayRouting },
    { name: '0163-payments-by-customer', class: Migration0163PaymentsByCustomer },
  ],
  events: paymentEvents,
  services: ({ config, orm, logger }) => {
    if (config.PAYMENTS_LIVE_SANDBOX) {
      logger.warn('PAYMENTS_LIVE_SANDBOX=true: LIVE-MODE PAYMENTS MAY GO THROUGH THE SANDBOX GATEWAY AND MOVE NO MONEY. Development only: never set it in production.', {
        setting: 'PAYMENTS_LIVE_SANDBOX', live_default_gateway: config.PAYMENTS_LIVE_GATEWAY ?? (config.STRIPE_API_KEY ? 'stripe' : 'sandbox'),
      });
    }
    return { paymentGateways: createPaymentGateways(config, () => nativePool(orm)) };
  },
  admin: { payments: paymentsAdminRouter },
});
