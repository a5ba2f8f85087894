import { balanceSchema, balancesOf, type BalanceView } from '../../rewards/public.ts';
import { builder } from '../builder.ts';
import { requirePermission, type GraphQLContext } from '../context.ts';
import { objectTypeFrom } from '../from-zod.ts';
import { CustomerRef, customerLoader } from './customers.ts';

export const LoyaltyBalanceRef = objectTypeFrom<BalanceView>('LoyaltyBalance', balanceSchema, 'A customer\'s loyalty balance (rewards:read): points, tier progress, next expiry and the rewards it affords now; tier and rewards as JSON.');

/** The request's loader of loyalty balances by customer id (a fixed number of statements for any number of customers). */
function balanceLoader(ctx: GraphQLContext) {
  return ctx.loaders.get('loyalty-balances', null, async (customerIds) =>
    balancesOf(await ctx.em.getConnection().getNativeClient(), ctx.caller, customerIds));
}

builder.queryField('loyaltyBalance', (t) => t.field({
  type: LoyaltyBalanceRef, nullable: true,
  description: 'A customer\'s loyalty balance, as GET /v3/rewards/customers/{customer_id}/balance (null when the customer does not exist in the key\'s account and mode).',
  args: { customer_id: t.arg.string({ required: true }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'rewards:read');
    const customer = await customerLoader(ctx).load(args.customer_id);
    return customer ? balanceLoader(ctx).load(customer.id) : null;
  },
}));

builder.objectField(CustomerRef, 'loyalty', (t) => t.field({
  type: LoyaltyBalanceRef, nullable: true,
  description: 'The customer\'s loyalty balance (rewards:read).',
  resolve: (customer, _args, ctx) => {
    requirePermission(ctx, 'rewards:read');
    return balanceLoader(ctx).load(customer.id);
  },
}));
