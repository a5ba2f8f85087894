import { invoiceSchema, invoicesOfCustomers, listInvoices, listSubscriptions, subscriptionSchema, subscriptionsOfCustomers, type InvoiceView, type SubscriptionView } from '../../billing/public.ts';
import { SUBSCRIPTION_STATUSES } from '../../../workflows/billing/shared.ts';
import { builder } from '../builder.ts';
import { requirePermission } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { connectionOf, nestedFirst, rootPage } from '../pages.ts';
import { CustomerRef, customerLoader } from './customers.ts';

export const SubscriptionRef = objectTypeFrom<SubscriptionView>('Subscription', subscriptionSchema, 'A subscription (billing:read).');
export const InvoiceRef = objectTypeFrom<InvoiceView>('Invoice', invoiceSchema, 'An invoice (billing:read); amounts in minor units.');
const SubscriptionStatus = enumFrom('SubscriptionStatus', SUBSCRIPTION_STATUSES, 'A subscription\'s status.');
const InvoiceStatus = enumFrom('InvoiceStatus', invoiceSchema.shape.status.options, 'An invoice\'s status (open: finalised and unpaid).');

builder.queryField('subscriptions', (t) => t.connection({
  type: SubscriptionRef, nullable: true,
  description: 'Subscriptions, newest first; filters as GET /v3/subscriptions.',
  args: { customer_id: t.arg.stringList(), status: t.arg({ type: [SubscriptionStatus] }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'billing:read');
    const page = rootPage(args);
    return connectionOf(await listSubscriptions(ctx.em, { customer_id: args.customer_id ?? undefined, status: args.status ?? undefined }, page), page.limit);
  },
}));

builder.queryField('invoices', (t) => t.connection({
  type: InvoiceRef, nullable: true,
  description: 'Invoices, newest first; filters as GET /v3/invoices.',
  args: { customer_id: t.arg.stringList(), subscription_id: t.arg.stringList(), status: t.arg({ type: [InvoiceStatus] }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'billing:read');
    const page = rootPage(args);
    return connectionOf(await listInvoices(ctx.em, {
      customer_id: args.customer_id ?? undefined, subscription_id: args.subscription_id ?? undefined, status: args.status ?? undefined,
    }, page), page.limit);
  },
}));

builder.objectField(CustomerRef, 'subscriptions', (t) => t.connection({
  type: SubscriptionRef, nullable: true,
  description: 'The customer\'s newest subscriptions (billing:read).',
  args: { status: t.arg({ type: [SubscriptionStatus] }) },
  resolve: async (customer, args, ctx) => {
    requirePermission(ctx, 'billing:read');
    const first = nestedFirst(args);
    const status = args.status ?? undefined;
    const rows = await ctx.loaders.byParent('subscriptions-of-customers', { first, status }, (s: SubscriptionView) => s.customer_id,
      (ids) => subscriptionsOfCustomers(ctx.em, ids, first + 1, status)).load(customer.id);
    return connectionOf(rows, first);
  },
}));

builder.objectField(CustomerRef, 'invoices', (t) => t.connection({
  type: InvoiceRef, nullable: true,
  description: 'The customer\'s newest invoices (billing:read); `status: [open]` for the open ones.',
  args: { status: t.arg({ type: [InvoiceStatus] }) },
  resolve: async (customer, args, ctx) => {
    requirePermission(ctx, 'billing:read');
    const first = nestedFirst(args);
    const status = args.status ?? undefined;
    const rows = await ctx.loaders.byParent('invoices-of-customers', { first, status }, (i: InvoiceView) => i.customer_id,
      (ids) => invoicesOfCustomers(ctx.em, ids, first + 1, status)).load(customer.id);
    return connectionOf(rows, first);
  },
}));

for (const ref of [SubscriptionRef, InvoiceRef] as const) {
  builder.objectField(ref, 'customer', (t) => t.field({
    type: CustomerRef, nullable: true, description: 'The customer (crm:read).',
    resolve: (parent: { customer_id: string }, _args, ctx) => {
      requirePermission(ctx, 'crm:read');
      return customerLoader(ctx).load(parent.customer_id);
    },
  }));
}

builder.objectField(InvoiceRef, 'subscription', (t) => t.field({
  type: SubscriptionRef, nullable: true, description: 'The subscription it bills (null for a one-off invoice).',
  resolve: async (invoice, _args, ctx) => {
    requirePermission(ctx, 'billing:read');
    if (!invoice.subscription_id) return null;
    return ctx.loaders.byId('subscriptions', async (ids) => listSubscriptions(ctx.em, {}, { where: { id: { $in: [...ids] } }, direction: 'desc', limit: ids.length }))
      .load(invoice.subscription_id);
  },
}));
