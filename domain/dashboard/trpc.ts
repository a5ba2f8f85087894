import { initTRPC, TRPCError } from '@trpc/server';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppDeps } from '../../api/http/deps.ts';
import { ApiError } from '../../platform/errors.ts';
import { domainErrorAsTrpc, safeErrorShape } from '../../platform/trpc-errors.ts';
import type { DashboardRole, DashboardSession } from './session.ts';

/**
 * The dashboard's tRPC API (`/dashboard/trpc`), for the web app in dashboard/. Every procedure needs
 * a signed-in user (the `bp_session` cookie); mutations also need the session's CSRF token in the
 * `X-CSRF-Token` header, and each declares the least role that may call it. The roles are checked
 * here, on the server: the app hides what a role cannot do, but hiding is not the check.
 */
export interface DashboardContext {
  orm: MikroORM;
  deps: Pick<AppDeps, 'temporal' | 'permissionScopes' | 'config' | 'events'>;
  session: DashboardSession | null;
  /** Whether the request carried the session's CSRF token. */
  csrfValid: boolean;
  requestId?: string;
}

/** Each role can do what the ones after it can, and more. */
const RANK: Record<DashboardRole, number> = { owner: 3, admin: 2, developer: 1, viewer: 0 };

export function roleAllows(role: DashboardRole, least: DashboardRole): boolean {
  return RANK[role] >= RANK[least];
}

const t = initTRPC.context<DashboardContext>().create({
  isDev: false,
  errorFormatter({ shape, error, ctx }) {
    const safe = safeErrorShape({ shape, error, requestId: ctx?.requestId ?? null },
      (id) => `Something went wrong${id ? ` (request id ${id})` : ''}; try again, or quote the request id to support.`);
    if (error.cause instanceof ApiError) {
      safe.data.problem = { code: error.cause.code, errors: error.cause.errors ?? [], suggestion: error.cause.suggestion };
    }
    return safe;
  },
});


/** Domain errors keep their meaning and field list across the tRPC boundary. */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  const mapped = result.ok ? null : domainErrorAsTrpc(result.error);
  if (mapped) throw mapped;
  return result;
});

const signedIn = t.middleware(({ ctx, next }) => {
  if (!ctx.session) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in to the dashboard first (POST /dashboard/session).' });
  return next({ ctx: { ...ctx, session: ctx.session } });
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Reads, for every signed-in role. */
export const readProcedure = t.procedure.use(domainErrors).use(signedIn);

/** Changes: the CSRF token, then at least role `least`. */
export function writeProcedure(least: DashboardRole) {
  return readProcedure.use(({ ctx, next, path }) => {
    if (!ctx.csrfValid) {
      throw new TRPCError({ code: 'FORBIDDEN', message: 'Missing or wrong X-CSRF-Token header: send the csrf_token of your session with every change.' });
    }
    if (!roleAllows(ctx.session.role, least)) {
      throw new TRPCError({ code: 'FORBIDDEN', message: `Your role (${ctx.session.role}) cannot do ${path}; it needs ${least} or higher. Ask an owner or admin of the account.` });
    }
    return next();
  });
}
