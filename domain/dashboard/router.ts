import { z } from 'zod';
import { KEY_TYPES } from '../accounts/entities.ts';
import { MAX_ROLL_OVERLAP_MS, createKey, listKeys, revokeKey, rollKey } from '../accounts/service.ts';
import { listEvents } from '../events/service.ts';
import { accountUsage, listRequestLogs } from '../requests/queries.ts';
import { scopedEm, type Scope } from '../scope.ts';
import { getDelivery, listDeliveries, listEndpoints, replayDelivery } from '../webhooks/public.ts';
import { readProcedure, roleAllows, router, writeProcedure, type DashboardContext } from './trpc.ts';
import { OIDC_SCOPES, type DashboardSession } from './session.ts';
import { membersRouter } from './team.ts';
import { oauthClientsRouter } from './oauth.ts';

const mode = z.enum(['test', 'live']);
const modeInput = z.object({ mode });
const id = z.string().min(1).max(64);
const PAGE = 50;

function scopeOf(session: DashboardSession, m: 'test' | 'live'): Scope {
  return { accountId: session.accountId, livemode: m === 'live' };
}

/** What the signed-in user may do, so the app shows only that (the procedures check it again). */
function capabilities(session: DashboardSession) {
  return {
    manageKeys: roleAllows(session.role, 'developer'),
    resendWebhooks: roleAllows(session.role, 'developer'),
    manageMembers: roleAllows(session.role, 'admin'),
    manageOAuthClients: roleAllows(session.role, 'admin'),
  };
}

const keys = router({
  list: readProcedure.input(modeInput).query(async ({ ctx, input }) => {
    const all = await listKeys(ctx.orm, ctx.session.accountId);
    return all.filter((k) => k.mode === input.mode);
  }),
  create: writeProcedure('developer')
    .input(z.object({
      name: z.string().trim().min(1).max(100),
      mode,
      restricted: z.boolean().default(false),
      permissions: z.array(z.string().max(60)).max(200).default([]),
      expires: z.string().max(10).optional(),
    }))
    .mutation(async ({ ctx, input }) => {
      const { secret, ...view } = await createKey(ctx.orm, {
        name: input.name,
        type: input.restricted ? 'restricted' : input.mode,
        mode: input.mode,
        permissions: input.restricted ? input.permissions : [],
        ...(input.expires ? { expires: input.expires } : {}),
        accountId: ctx.session.accountId,
      }, ctx.deps.permissionScopes);
      return { key: view, secret };
    }),
  revoke: writeProcedure('developer')
    .input(z.object({ keyId: id }))
    .mutation(({ ctx, input }) => revokeKey(ctx.orm, input.keyId, ctx.session.accountId)),
  roll: writeProcedure('developer')
    .input(z.object({ keyId: id, overlapHours: z.number().int().min(0).max(MAX_ROLL_OVERLAP_MS / 3_600_000) }))
    .mutation(async ({ ctx, input }) => {
      const { rolled, created } = await rollKey(ctx.orm, { keyId: input.keyId, accountId: ctx.session.accountId, overlapMs: input.overlapHours * 3_600_000 });
      const { secret, ...view } = created;
      return { rolled, key: view, secret };
    }),
});

const usage = router({
  summary: readProcedure.input(modeInput).query(async ({ ctx, input }) => ({
    ...(await accountUsage(ctx.orm, scopeOf(ctx.session, input.mode))),
    daily_limit: ctx.deps.config.RATE_LIMIT_PER_DAY,
    minute_limit: ctx.deps.config.RATE_LIMIT_PER_MINUTE,
  })),
});

const requests = router({
  list: readProcedure
    .input(z.object({
      mode,
      status: z.string().trim().max(6).optional(),
      path: z.string().trim().max(300).optional(),
      keyId: z.string().trim().max(64).optional(),
      before: z.string().max(20).optional(),
    }))
    .query(({ ctx, input }) => listRequestLogs(ctx.orm, scopeOf(ctx.session, input.mode), {
      ...(input.status ? { status: input.status } : {}),
      ...(input.path ? { path: input.path } : {}),
      ...(input.keyId ? { apiKeyId: input.keyId } : {}),
      ...(input.before ? { before: input.before } : {}),
      limit: PAGE,
    })),
});

const page = { where: {}, direction: 'desc' as const, limit: PAGE };

const webhooks = router({
  endpoints: readProcedure.input(modeInput).query(async ({ ctx, input }) =>
    (await listEndpoints(scopedEm(ctx.orm, scopeOf(ctx.session, input.mode)), {}, page)).slice(0, PAGE)),
  deliveries: readProcedure.input(z.object({ mode, endpointId: id })).query(async ({ ctx, input }) =>
    (await listDeliveries(scopedEm(ctx.orm, scopeOf(ctx.session, input.mode)), input.endpointId, {}, page)).slice(0, PAGE)),
  delivery: readProcedure.input(z.object({ mode, endpointId: id, deliveryId: id })).query(({ ctx, input }) =>
    getDelivery(scopedEm(ctx.orm, scopeOf(ctx.session, input.mode)), input.endpointId, input.deliveryId)),
  resend: writeProcedure('developer')
    .input(z.object({ mode, endpointId: id, deliveryId: id }))
    .mutation(({ ctx, input }) => {
      const scope = scopeOf(ctx.session, input.mode);
      const starter = { client: ctx.deps.temporal.client, taskQueue: ctx.deps.temporal.taskQueue('webhooks') };
      return replayDelivery(scopedEm(ctx.orm, scope), scope, starter, input.endpointId, input.deliveryId);
    }),
});

const events = router({
  list: readProcedure
    .input(z.object({ mode, type: z.string().trim().max(100).optional() }))
    .query(async ({ ctx, input }) =>
      (await listEvents(scopedEm(ctx.orm, scopeOf(ctx.session, input.mode)), input.type ? { type: [input.type] } : {}, page)).slice(0, PAGE)),
});

export const dashboardRouter = router({
  me: readProcedure.query(({ ctx }) => ({
    user: { id: ctx.session.userId, email: ctx.session.email, role: ctx.session.role },
    account_id: ctx.session.accountId,
    can: capabilities(ctx.session),
    permission_scopes: ctx.deps.permissionScopes,
    key_types: KEY_TYPES,
    oidc_scopes: OIDC_SCOPES,
  })),
  keys,
  usage,
  requests,
  webhooks,
  events,
  members: membersRouter,
  oauthClients: oauthClientsRouter,
});

export type DashboardRouter = typeof dashboardRouter;
export type { DashboardContext };
