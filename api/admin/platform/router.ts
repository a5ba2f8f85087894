import { z } from 'zod';
import { ACCOUNT_TIERS, KEY_TYPES } from '../../../domain/accounts/entities.ts';
import {
  createAccount, createKey, defaultAccount, keyUsage, listAccounts, listKeys, revokeKey, setAccountTier,
} from '../../../domain/accounts/service.ts';
import { adminProcedure, router } from '../trpc.ts';

/** Accounts and API keys in the internal admin API: the same domain services the CLI uses. */
export const accountsRouter = router({
  create: adminProcedure
    .input(z.object({ name: z.string().min(1), tier: z.enum(ACCOUNT_TIERS).optional() }))
    .mutation(({ ctx, input }) => createAccount(ctx.orm, input)),
  list: adminProcedure.query(({ ctx }) => listAccounts(ctx.orm)),
  default: adminProcedure.query(({ ctx }) => defaultAccount(ctx.orm)),
  setTier: adminProcedure
    .input(z.object({ accountId: z.string(), tier: z.enum(ACCOUNT_TIERS) }))
    .mutation(({ ctx, input }) => setAccountTier(ctx.orm, input.accountId, input.tier)),
});

export const keysRouter = router({
  create: adminProcedure
    .input(z.object({
      name: z.string().min(1),
      type: z.enum(KEY_TYPES),
      mode: z.enum(['live', 'test']).optional(),
      permissions: z.array(z.string()).optional(),
      expires: z.string().optional(),
      accountId: z.string().optional(),
    }))
    .mutation(async ({ ctx, input }) => {
      const { secret, ...view } = await createKey(ctx.orm, input, ctx.permissionScopes);
      return { ...view, key: secret, masked: view.key };
    }),
  list: adminProcedure
    .input(z.object({ accountId: z.string().optional() }).optional())
    .query(({ ctx, input }) => listKeys(ctx.orm, input?.accountId)),
  revoke: adminProcedure
    .input(z.object({ keyId: z.string() }))
    .mutation(({ ctx, input }) => revokeKey(ctx.orm, input.keyId)),
  usage: adminProcedure
    .input(z.object({ keyId: z.string() }))
    .query(({ ctx, input }) => keyUsage(ctx.orm, input.keyId)),
});

