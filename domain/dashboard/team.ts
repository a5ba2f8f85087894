import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { DASHBOARD_ROLES, addMember, changeMemberRole, listMembers, removeMember, type DashboardRole } from './session.ts';
import { readProcedure, router, writeProcedure } from './trpc.ts';

const role = z.enum(DASHBOARD_ROLES);
const userId = z.string().min(1).max(64);

/** Only an owner makes, changes or removes an owner: an admin cannot raise itself above its role. */
function ownerOnly(actor: DashboardRole, ...roles: (DashboardRole | undefined)[]): void {
  if (actor !== 'owner' && roles.includes('owner')) {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'Only an owner can grant, change or remove the owner role.' });
  }
}

/** The account's team: identity's members, managed by admins and owners. */
export const membersRouter = router({
  list: readProcedure.query(({ ctx }) => listMembers(ctx.orm, ctx.session.accountId)),
  add: writeProcedure('admin')
    .input(z.object({ email: z.string().trim().min(1).max(254), role, password: z.string().max(256).optional() }))
    .mutation(({ ctx, input }) => {
      ownerOnly(ctx.session.role, input.role);
      return addMember(ctx.orm, { accountId: ctx.session.accountId, email: input.email, role: input.role, ...(input.password ? { password: input.password } : {}) });
    }),
  changeRole: writeProcedure('admin')
    .input(z.object({ userId, role }))
    .mutation(async ({ ctx, input }) => {
      const target = (await listMembers(ctx.orm, ctx.session.accountId)).find((m) => m.id === input.userId);
      ownerOnly(ctx.session.role, input.role, target?.role);
      return changeMemberRole(ctx.orm, { accountId: ctx.session.accountId, userId: input.userId, role: input.role });
    }),
  remove: writeProcedure('admin')
    .input(z.object({ userId }))
    .mutation(async ({ ctx, input }) => {
      const target = (await listMembers(ctx.orm, ctx.session.accountId)).find((m) => m.id === input.userId);
      ownerOnly(ctx.session.role, target?.role);
      return removeMember(ctx.orm, { accountId: ctx.session.accountId, userId: input.userId });
    }),
});
