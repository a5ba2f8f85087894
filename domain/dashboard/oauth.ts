import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { GRANT_TYPES, createOAuthClient, listOAuthClients, revokeOAuthClient } from './session.ts';
import { readProcedure, router, writeProcedure } from './trpc.ts';

/** The account's OAuth clients (identity's), registered and revoked by admins and owners. */
export const oauthClientsRouter = router({
  list: readProcedure.query(({ ctx }) => listOAuthClients(ctx.orm, ctx.session.accountId)),
  create: writeProcedure('admin')
    .input(z.object({
      name: z.string().max(100),
      type: z.enum(['public', 'confidential']),
      mode: z.enum(['test', 'live']),
      redirectUris: z.array(z.string().max(2000)).max(10),
      grantTypes: z.array(z.enum(GRANT_TYPES)).min(1).max(3),
      scopes: z.array(z.string().max(60)).max(200),
      firstParty: z.boolean().default(false),
    }))
    .mutation(async ({ ctx, input }) => {
      // A first-party client skips the consent screen: only an owner vouches for that.
      if (input.firstParty && ctx.session.role !== 'owner') {
        throw new TRPCError({ code: 'FORBIDDEN', message: 'Only an owner can register a first-party client (one that skips the consent screen).' });
      }
      const { client_secret: secret, ...client } = await createOAuthClient(ctx.orm, { ...input, accountId: ctx.session.accountId }, ctx.deps.permissionScopes);
      return { client, secret: secret ?? null };
    }),
  revoke: writeProcedure('admin')
    .input(z.object({ clientId: z.string().min(1).max(64) }))
    .mutation(({ ctx, input }) => revokeOAuthClient(ctx.orm, { accountId: ctx.session.accountId, clientId: input.clientId })),
});
