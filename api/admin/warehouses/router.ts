import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { adminCancelTransfer, adminCloseCycleCount, inspect, search } from '../../../domain/warehouses/operations.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const ref = z.object({ accountId: z.string().min(1), livemode: z.boolean(), id: z.string().min(1).max(64) });
const steer = ref.extend({ operator: z.string().trim().min(1).max(100), reason: z.string().trim().min(3).max(500) });

function context(ctx: AdminContext, input: { accountId: string; livemode: boolean }) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return { temporal: ctx.temporal, em: scopedEm(ctx.orm, scope), scope };
}

/** Admin: find transfers and cycle counts, read their workflows' live state, and steer them (recorded with operator and reason). */
export const warehousesAdminRouter = router({
  inspect: adminProcedure.input(ref).query(({ ctx, input }) => {
    const c = context(ctx, input);
    return inspect(c.temporal, c.em, c.scope, input.id);
  }),
  search: adminProcedure
    .input(z.object({ accountId: z.string().optional(), resourceId: z.string().optional(), customerId: z.string().optional(), status: z.string().optional(), limit: z.number().int().min(1).max(200).default(50) }))
    .query(({ ctx, input }) => {
      if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
      return search(ctx.temporal, input, input.limit);
    }),
  cancelTransfer: adminProcedure.input(steer).mutation(({ ctx, input }) => {
    const c = context(ctx, input);
    return adminCancelTransfer(c.temporal, c.em, c.scope, input.id, input.operator, input.reason);
  }),
  forceCloseCycleCount: adminProcedure.input(steer).mutation(({ ctx, input }) => {
    const c = context(ctx, input);
    return adminCloseCycleCount(c.temporal, c.em, c.scope, input.id, 'force_close', input.operator, input.reason);
  }),
  abortCycleCount: adminProcedure.input(steer).mutation(({ ctx, input }) => {
    const c = context(ctx, input);
    return adminCloseCycleCount(c.temporal, c.em, c.scope, input.id, 'abort', input.operator, input.reason);
  }),
});
