import { z } from 'zod';
import { setLiveGateway } from '../../../domain/payments/service.ts';
import { GATEWAY_NAMES } from '../../../domain/payments/gateways/types.ts';
import { adminProcedure, router } from '../trpc.ts';

/** Admin: which gateway an account's live payments use (test mode always uses the sandbox). */
export const paymentsAdminRouter = router({
  setLiveGateway: adminProcedure
    .input(z.object({ accountId: z.string().min(1), gateway: z.enum(GATEWAY_NAMES) }))
    .mutation(async ({ ctx, input }) => {
      await setLiveGateway(ctx.orm.em.fork(), input.accountId, input.gateway);
      return { account_id: input.accountId, live_gateway: input.gateway };
    }),
});
