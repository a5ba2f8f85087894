import { paymentSchema, paymentsOfCustomers, type PaymentView } from '../../payments/public.ts';
import { builder } from '../builder.ts';
import { requirePermission } from '../context.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { newestOfParent } from '../pages.ts';
import { CustomerRef, customerLoader } from './customers.ts';

export const PaymentRef = objectTypeFrom<PaymentView>('Payment', paymentSchema, 'A payment (payments:read); card details are never exposed beyond REST\'s.');

builder.objectField(CustomerRef, 'payments', (t) => t.connection({
  type: PaymentRef, nullable: true,
  description: 'The customer\'s newest payments (payments:read).',
  resolve: (customer, args, ctx) => newestOfParent(ctx, customer.id, {
    permission: 'payments:read', loader: 'payments-of-customers', args, parentOf: (p: PaymentView) => p.customer_id,
    read: (ids, limit) => paymentsOfCustomers(ctx.em, ids, limit),
  }),
}));

builder.objectField(PaymentRef, 'customer', (t) => t.field({
  type: CustomerRef, nullable: true, description: 'The paying customer, if any (crm:read).',
  resolve: (payment, _args, ctx) => {
    requirePermission(ctx, 'crm:read');
    return payment.customer_id ? customerLoader(ctx).load(payment.customer_id) : null;
  },
}));
