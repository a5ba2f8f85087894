import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { adminEvaluateSegment, describeSegment, pauseSegmentSchedule } from '../../../domain/crm/segments.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const segmentRef = z.object({ accountId: z.string().min(1), livemode: z.boolean(), segmentId: z.string().min(1) });
/** Who asks and why: kept on what the action leaves behind (the workflow's memo, the schedule's note). */
const audit = { operator: z.string().trim().min(1).max(200), reason: z.string().trim().min(1).max(1000) };

function context(ctx: AdminContext, input: z.infer<typeof segmentRef>) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  const scope = { accountId: input.accountId, livemode: input.livemode };
  return { em: scopedEm(ctx.orm, scope), scope, deps: { temporal: ctx.temporal } };
}

/** Admin: look at a segment (its nightly schedule and latest evaluation), evaluate it now, pause or resume its schedule. */
export const crmAdminRouter = router({
  describeSegment: adminProcedure
    .input(segmentRef)
    .query(({ ctx, input }) => {
      const c = context(ctx, input);
      return describeSegment(c.deps, c.em, input.segmentId);
    }),
  evaluateSegment: adminProcedure
    .input(segmentRef.extend(audit))
    .mutation(({ ctx, input }) => {
      const c = context(ctx, input);
      return adminEvaluateSegment(c.deps, c.em, c.scope, input.segmentId, { operator: input.operator, reason: input.reason });
    }),
  pauseSegmentSchedule: adminProcedure
    .input(segmentRef.extend({ ...audit, paused: z.boolean() }))
    .mutation(({ ctx, input }) => {
      const c = context(ctx, input);
      return pauseSegmentSchedule(c.deps, c.em, input.segmentId, input.paused, { operator: input.operator, reason: input.reason });
    }),
});
