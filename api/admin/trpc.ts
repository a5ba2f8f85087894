import { initTRPC, TRPCError } from '@trpc/server';
import { timingSafeEqual } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';

/**
 * The one place `initTRPC` runs. The admin API is internal: every procedure requires the
 * `ADMIN_TOKEN` bearer, and with no token configured every call is refused.
 */
export interface AdminContext {
  orm: MikroORM;
  temporal: TemporalHandle | null;
  adminToken: string | undefined;
  /** The bearer token the caller sent, if any. */
  presentedToken: string | undefined;
}

/** Builds a context without HTTP (tests, the CLI); the HTTP adapter wraps it. */
export function createContextInner(ctx: AdminContext): AdminContext {
  return ctx;
}

const t = initTRPC.context<AdminContext>().create();

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const STATUS_TO_TRPC: Record<number, TRPCError['code']> = {
  400: 'BAD_REQUEST', 404: 'NOT_FOUND', 409: 'CONFLICT', 422: 'UNPROCESSABLE_CONTENT', 503: 'SERVICE_UNAVAILABLE',
};

const guarded = t.middleware(async ({ ctx, next }) => {
  if (!ctx.adminToken) {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'The admin API is disabled: set ADMIN_TOKEN on the server to enable it.' });
  }
  if (!ctx.presentedToken || !sameToken(ctx.presentedToken, ctx.adminToken)) {
    throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Send the admin token as `Authorization: Bearer <ADMIN_TOKEN>`.' });
  }
  return next();
});

/** Domain errors keep their meaning (and field list) across the tRPC boundary. */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof ApiError) {
    const cause = result.error.cause;
    const fields = (cause.errors ?? []).map((e) => ` ${e.path}: ${e.message}.`).join('');
    throw new TRPCError({ code: STATUS_TO_TRPC[cause.status] ?? 'INTERNAL_SERVER_ERROR', message: `${cause.detail}${fields} ${cause.suggestion}`, cause });
  }
  return result;
});

export const router = t.router;
export const adminProcedure = t.procedure.use(guarded).use(domainErrors);
export const createCallerFactory = t.createCallerFactory;
