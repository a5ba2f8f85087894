import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { describeLoyalty, findLoyaltyWorkflows, listAdminActions, operatorAdjust, operatorReevaluateTier } from '../../../domain/rewards/admin.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const customerRef = z.object({ accountId: z.string().min(1), livemode: z.boolean(), customerId: z.string().min(1) });
const action = customerRef.extend({
  operator: z.string().trim().min(1, 'name the operator taking the action').max(100),
  reason: z.string().trim().min(1, 'say why').max(500),
});

function temporalOf(ctx: AdminContext) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  return ctx.temporal;
}

/**
 * Admin: find loyalty workflows (by customer, account or resource id), read one's live state (its
 * query, with the balance), and steer it: a manual adjustment or a tier re-evaluation, each
 * recorded with the operator and the reason.
 */
export const rewardsAdminRouter = router({
  find: adminProcedure
    .input(z.object({
      accountId: z.string().min(1).optional(), livemode: z.boolean().optional(), customerId: z.string().min(1).optional(),
      resourceId: z.string().min(1).optional(), workflowId: z.string().min(1).optional(), limit: z.number().int().min(1).max(100).default(20),
    }))
    .query(({ ctx, input }) => findLoyaltyWorkflows(temporalOf(ctx), input)),
  describe: adminProcedure
    .input(customerRef)
    .query(({ ctx, input }) => describeLoyalty(ctx.orm, temporalOf(ctx), input)),
  adjustPoints: adminProcedure
    .input(action.extend({ points: z.number().int().min(-10_000_000).max(10_000_000).refine((p) => p !== 0, 'points is not 0') }))
    .mutation(({ ctx, input }) => operatorAdjust(ctx.orm, temporalOf(ctx), input)),
  reevaluateTier: adminProcedure
    .input(action)
    .mutation(({ ctx, input }) => operatorReevaluateTier(ctx.orm, temporalOf(ctx), input)),
  actions: adminProcedure
    .input(customerRef)
    .query(({ ctx, input }) => listAdminActions(ctx.orm, input)),
});
