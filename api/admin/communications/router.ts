import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import {
  adminActions, adminHangup, adminRelease, adminSetRate, findRecord, findWorkflows, liveState,
} from '../../../domain/communications/admin.ts';
import { nativePool } from '../../../db/pool.ts';
import { createTelephony } from '../../../domain/communications/telephony/index.ts';
import { adminProcedure, router } from '../trpc.ts';
import type { AdminContext } from '../trpc.ts';

const operator = z.string().min(1).max(100);
const reason = z.string().min(3).max(1000);

function temporalOf(ctx: AdminContext) {
  if (!ctx.temporal) throw new TRPCError({ code: 'PRECONDITION_FAILED', message: 'Temporal is not connected to this admin API' });
  return ctx.temporal;
}

/** Admin: find calls, numbers and messages; read a call's live state; hang up, release, set rates (operator and reason recorded). */
export const communicationsAdminRouter = router({
  find: adminProcedure.input(z.object({ id: z.string().min(1).max(64) })).query(({ ctx, input }) => findRecord(ctx.orm, input.id)),
  findWorkflows: adminProcedure
    .input(z.object({ attribute: z.enum(['accountId', 'customerId', 'resourceId', 'status']), value: z.string().min(1).max(200) }))
    .query(({ ctx, input }) => findWorkflows(temporalOf(ctx), input)),
  callState: adminProcedure.input(z.object({ callId: z.string().min(1).max(64) })).query(({ ctx, input }) => liveState(ctx.orm, temporalOf(ctx), input.callId)),
  hangup: adminProcedure
    .input(z.object({ callId: z.string().min(1).max(64), operator, reason }))
    .mutation(({ ctx, input }) => adminHangup({ orm: ctx.orm, temporal: temporalOf(ctx), telephony: createTelephony(() => nativePool(ctx.orm)) }, input)),
  releaseNumber: adminProcedure
    .input(z.object({ numberId: z.string().min(1).max(64), operator, reason }))
    .mutation(({ ctx, input }) => adminRelease({ orm: ctx.orm, temporal: temporalOf(ctx), telephony: createTelephony(() => nativePool(ctx.orm)) }, input)),
  setRate: adminProcedure
    .input(z.object({
      accountId: z.string().min(1).max(64), livemode: z.boolean(), country: z.string().regex(/^[A-Z]{2}$/),
      perMinute: z.number().int().min(0).max(100_000), operator, reason,
    }))
    .mutation(({ ctx, input }) => adminSetRate(ctx.orm, input)),
  actions: adminProcedure.input(z.object({ targetId: z.string().min(1).max(100) })).query(({ ctx, input }) => adminActions(ctx.orm, input.targetId)),
});
