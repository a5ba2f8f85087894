import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import {
  cancelOrderByOperator, describeOrderWorkflow, escalateOrderNow, findOrderWorkflows, reassignApprover,
} from '../../../domain/erp/procurement.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { PROCUREMENT_STATUSES } from '../../../workflows/erp/shared.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const scope = { accountId: z.string().min(1), livemode: z.boolean() };
const orderRef = z.object({ ...scope, orderId: z.string().min(1) });
/** Every steering action names who did it and why; both are recorded with the action. */
const operator = { operator: z.string().trim().min(1).max(200), reason: z.string().trim().min(1).max(1000) };

function context(ctx: AdminContext, input: { accountId: string; livemode: boolean }) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  return { em: scopedEm(ctx.orm, { accountId: input.accountId, livemode: input.livemode }), temporal: ctx.temporal };
}

/** Admin: find purchase-order workflows, read one's live state, and steer it (each action recorded with operator and reason). */
export const erpAdminRouter = router({
  describeOrder: adminProcedure
    .input(orderRef)
    .query(({ ctx, input }) => describeOrderWorkflow(context(ctx, input), input.orderId)),
  findOrders: adminProcedure
    .input(z.object({ ...scope, orderId: z.string().min(1).optional(), status: z.enum(PROCUREMENT_STATUSES).optional() }))
    .query(({ ctx, input }) => findOrderWorkflows(context(ctx, input).temporal, {
      accountId: input.accountId, livemode: input.livemode, ...(input.orderId ? { resourceId: input.orderId } : {}), ...(input.status ? { status: input.status } : {}),
    })),
  escalateOrder: adminProcedure
    .input(orderRef.extend(operator))
    .mutation(({ ctx, input }) => escalateOrderNow(context(ctx, input), input, input.orderId, input)),
  reassignApprover: adminProcedure
    .input(orderRef.extend({ ...operator, level: z.number().int().min(1).max(2), assignee: z.string().min(1).max(64).describe('The API key id that may approve the level.') }))
    .mutation(({ ctx, input }) => reassignApprover(context(ctx, input), input, input.orderId, input.level, input.assignee, input)),
  cancelOrder: adminProcedure
    .input(orderRef.extend(operator))
    .mutation(({ ctx, input }) => cancelOrderByOperator(context(ctx, input), input, input.orderId, input)),
});
