import { initTRPC, TRPCError } from '@trpc/server';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { domainErrorAsTrpc, safeErrorShape } from '../../platform/trpc-errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';

/**
 * The one place `initTRPC` runs. The admin API is internal: every procedure requires the
 * `ADMIN_TOKEN` bearer, and with no token configured every call is refused.
 */
export interface AdminContext {
  orm: MikroORM;
  temporal: TemporalHandle | null;
  /** The permission scopes keys may hold. */
  permissionScopes: readonly string[];
  adminToken: string | undefined;
  /** The bearer token the caller sent, if any. */
  presentedToken: string | undefined;
  /** The HTTP request's id (`Request-Id`), quoted in the generic message of an unexpected error. */
  requestId?: string;
  /** The caller's address, for throttling failed token attempts (absent for in-process callers). */
  clientIp?: string;
  /** Failed-token throttle shared by the HTTP adapter's requests (absent for in-process callers). */
  throttle?: FailedAuthThrottle;
}

/**
 * Failed admin-token attempts per client address: `limit` per `windowMs` as a rate (the generic
 * cell rate algorithm, as the sign-in throttle, domain/identity/throttle.ts): a burst of `limit`
 * failures, then one more per `windowMs / limit`; no window's end hands out a second allowance.
 * A throttled address is refused with TOO_MANY_REQUESTS, the right token included. In memory and
 * per process: the admin API is internal, and a guesser is still held to `limit` tries a minute
 * per process.
 */
export class FailedAuthThrottle {
  readonly limit: number;
  readonly windowMs: number;
  /** Each address's theoretical arrival time (ms); an entry in the past holds nothing back. */
  private readonly tat = new Map<string, number>();
  private nextSweep = 0;

  constructor(limit = 10, windowMs = 60_000) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  private get intervalMs(): number {
    return this.windowMs / this.limit;
  }

  /** Milliseconds until `clientIp` may try again; 0 when it is not throttled. */
  blockedFor(clientIp: string, now = Date.now()): number {
    const over = Math.max(this.tat.get(clientIp) ?? now, now) + this.intervalMs - now - this.windowMs;
    return over > 0 ? Math.ceil(over) : 0;
  }

  recordFailure(clientIp: string, now = Date.now()): void {
    if (now >= this.nextSweep) {
      // Addresses that hold nothing back any more are forgotten, once a window.
      for (const [ip, tat] of this.tat) if (tat <= now) this.tat.delete(ip);
      this.nextSweep = now + this.windowMs;
    }
    this.tat.set(clientIp, Math.max(this.tat.get(clientIp) ?? now, now) + this.intervalMs);
  }
}

/** Builds a context without HTTP (tests, the CLI); the HTTP adapter wraps it. */
export function createContextInner(ctx: AdminContext): AdminContext {
  return ctx;
}

const t = initTRPC.context<AdminContext>().create({
  isDev: false,
  // Never a stack trace or a cause in an answer; an unexpected error's message is replaced by a
  // generic one quoting the request id, under which the HTTP adapter logs the details.
  errorFormatter({ shape, error, ctx }) {
    return safeErrorShape({ shape, error, requestId: ctx?.requestId ?? null },
      (id) => `Internal error${id ? ` (request id ${id})` : ''}; the details are in the server log.`);
  },
});

/** Constant time whatever the lengths: the digests compared always have the same length. */
function sameToken(a: string, b: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(a), digest(b));
}


const guarded = t.middleware(async ({ ctx, next }) => {
  if (!ctx.adminToken) {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'The admin API is disabled: set ADMIN_TOKEN on the server to enable it.' });
  }
  const throttle = ctx.throttle && ctx.clientIp !== undefined ? { counter: ctx.throttle, ip: ctx.clientIp } : null;
  const waitMs = throttle ? throttle.counter.blockedFor(throttle.ip) : 0;
  if (waitMs > 0) {
    throw new TRPCError({
      code: 'TOO_MANY_REQUESTS',
      message: `Too many failed admin token attempts from this address; try again in ${Math.ceil(waitMs / 1000)} s.`,
    });
  }
  if (!ctx.presentedToken || !sameToken(ctx.presentedToken, ctx.adminToken)) {
    throttle?.counter.recordFailure(throttle.ip);
    throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Send the admin token as `Authorization: Bearer <ADMIN_TOKEN>`.' });
  }
  return next();
});

/** Domain errors keep their meaning (and field list) across the tRPC boundary. */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  const mapped = result.ok ? null : domainErrorAsTrpc(result.error);
  if (mapped) throw mapped;
  return result;
});

export const router = t.router;
export const adminProcedure = t.procedure.use(guarded).use(domainErrors);
export const createCallerFactory = t.createCallerFactory;
