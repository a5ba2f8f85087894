import {
  cancelSubscription, cancelSubscriptionBody, createSubscription, invoiceSchema, invoicesOfCustomers, listInvoices, listSubscriptions, subscriptionBody,
  subscriptionInput, subscriptionSchema, subscriptionsOfCustomers, type BillingContext, type InvoiceView, type SubscriptionView,
} from '../../billing/public.ts';
import { SUBSCRIPTION_STATUSES } from '../../../workflows/billing/shared.ts';
import { builder } from '../builder.ts';
import { requirePermission, type GraphQLContext } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { inputTypeFrom, objectTypeFrom } from '../from-zod.ts';
import { validInput } from '../input.ts';
import { connectionOf, rootPage, newestOfParent } from '../pages.ts';
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
  resolve: (customer, args, ctx) => newestOfParent(ctx, customer.id, {
    permission: 'billing:read', loader: 'subscriptions-of-customers', args, parentOf: (s: SubscriptionView) => s.customer_id,
    read: (ids, limit, status) => subscriptionsOfCustomers(ctx.em, ids, limit, status),
  }),
}));

builder.objectField(CustomerRef, 'invoices', (t) => t.connection({
  type: InvoiceRef, nullable: true,
  description: 'The customer\'s newest invoices (billing:read); `status: [open]` for the open ones.',
  args: { status: t.arg({ type: [InvoiceStatus] }) },
  resolve: (customer, args, ctx) => newestOfParent(ctx, customer.id, {
    permission: 'billing:read', loader: 'invoices-of-customers', args, parentOf: (i: InvoiceView) => i.customer_id,
    read: (ids, limit, status) => invoicesOfCustomers(ctx.em, ids, limit, status),
  }),
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

const CreateSubscriptionInput = inputTypeFrom('CreateSubscriptionInput', subscriptionBody, 'The body of POST /v3/subscriptions, validated by the same schema (errors name input.<field>).');
const CancelSubscriptionInput = inputTypeFrom('CancelSubscriptionInput', cancelSubscriptionBody, 'The body of POST /v3/subscriptions/{subscription_id}/cancel.');

function billingContext(ctx: GraphQLContext): BillingContext {
  return { em: ctx.em, temporal: ctx.services.temporal, gateways: ctx.services.paymentGateways, cyclesPerRun: ctx.services.billingCyclesPerRun };
}

builder.mutationField('createSubscription', (t) => t.field({
  type: SubscriptionRef,
  description: 'Create a subscription (billing:write), as POST /v3/subscriptions: its workflow writes it; the answer comes once it is stored. With an Idempotency-Key a retry answers the same subscription.',
  args: { input: t.arg({ type: CreateSubscriptionInput, required: true }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'billing:write');
    const body = validInput(subscriptionBody, args.input, 'input');
    const input = subscriptionInput(body, await ctx.resourceId('subscription'), ctx.requestId);
    return ctx.withTemporal(() => createSubscription(billingContext(ctx), ctx.caller, input));
  },
}));

builder.mutationField('cancelSubscription', (t) => t.field({
  type: SubscriptionRef,
  description: 'Cancel a subscription now or at the end of the current period (billing:write), as POST /v3/subscriptions/{subscription_id}/cancel.',
  args: { id: t.arg.string({ required: true }), input: t.arg({ type: CancelSubscriptionInput, required: false }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'billing:write');
    const body = validInput(cancelSubscriptionBody, args.input ?? {}, 'input');
    return ctx.withTemporal(() => cancelSubscription(billingContext(ctx), args.id, body.at_period_end, ctx.requestId, ctx.idempotencyKey));
  },
}));
