import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { describeSubscriptionWorkflow, retryCollection } from '../../../domain/billing/subscriptions.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const subscriptionRef = z.object({ accountId: z.string().min(1), livemode: z.boolean(), subscriptionId: z.string().min(1) });

function workflowContext(ctx: AdminContext, input: z.infer<typeof subscriptionRef>) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  return { em: scopedEm(ctx.orm, { accountId: input.accountId, livemode: input.livemode }), temporal: ctx.temporal };
}

/** Admin: look inside a subscription's workflow, and retry a failed collection now. */
export const billingAdminRouter = router({
  describeSubscription: adminProcedure
    .input(subscriptionRef)
    .query(({ ctx, input }) => describeSubscriptionWorkflow(workflowContext(ctx, input), input.subscriptionId)),
  retryCollection: adminProcedure
    .input(subscriptionRef)
    .mutation(({ ctx, input }) => retryCollection(workflowContext(ctx, input), input.subscriptionId)),
});
