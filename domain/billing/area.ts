import { createBillingActivities } from '../../activities/billing/index.ts';
import { billingAdminRouter } from '../../api/admin/billing/router.ts';
import { billingRoutes } from '../../api/v3/billing/routes.ts';
import { invoiceTemplateRoutes } from '../../api/v3/billing/invoice-templates.ts';
import { Migration0005Billing } from '../../db/migrations/0005-billing.ts';
import { Migration0081BillingInvoiceTemplates } from '../../db/migrations/0081-billing-invoice-templates.ts';
import { Migration0083BillingCardGateway } from '../../db/migrations/0083-billing-card-gateway.ts';
import { Migration0172BillingByStatus } from '../../db/migrations/0172-billing-by-status.ts';
import { defineArea } from '../../platform/area.ts';
import { BillingPlan, Invoice, Subscription, TaxRate, TestClock, UsageRecord } from './entities.ts';
import { billingEvents } from './events.ts';
import { subscriptionSavedCards } from './saved-cards.ts';
import { InvoiceTemplate } from './invoice-template-entity.ts';

/** Billing: plans, subscriptions (one workflow each for their whole life), invoices, usage, test clocks. */
export const billingArea = defineArea({
  name: 'billing',
  permissions: ['billing'],
  routes: [...billingRoutes, ...invoiceTemplateRoutes],
  workflows: new URL('../../workflows/billing/index.ts', import.meta.url),
  activities: createBillingActivities,
  entities: [BillingPlan, TaxRate, TestClock, Subscription, Invoice, UsageRecord, InvoiceTemplate],
  migrations: [
    { name: '0005-billing', class: Migration0005Billing },
    { name: '0081-billing-invoice-templates', class: Migration0081BillingInvoiceTemplates },
    { name: '0083-billing-card-gateway', class: Migration0083BillingCardGateway },
    { name: '0172-billing-by-status', class: Migration0172BillingByStatus },
  ],
  events: billingEvents,
  /** Payments charges a customer's default saved card (a subscription's card on file) for a split without a card. */
  services: () => ({ savedCards: subscriptionSavedCards }),
  admin: { billing: billingAdminRouter },
});
