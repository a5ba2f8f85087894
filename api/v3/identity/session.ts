import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../../http/deps.ts';
import { nativePool } from '../../../db/pool.ts';
import { ApiError } from '../../../platform/errors.ts';
import {
  checkCsrf, clearedSessionCookie, createSession, revokeSession, sessionCookie, sessionFromRequest, type DashboardSession,
} from '../../../domain/identity/sessions.ts';
import { checkSignIn } from '../../../domain/identity/sign-in.ts';
import type { LoginThrottle } from '../../../domain/identity/throttle.ts';
import { readJson } from './body.ts';

const signInBody = z.object({
  email: z.string().min(1, 'is required').max(254, 'must be at most 254 characters'),
  password: z.string().min(1, 'is required').max(256, 'must be at most 256 characters'),
  account_id: z.string().max(64, 'must be at most 64 characters').optional(),
}).meta({ id: 'DashboardSignIn' });

export const sessionRequired = () => new ApiError({
  status: 401, code: 'session_required', title: 'Unauthorized',
  detail: 'No valid dashboard session: not signed in, or the session expired, went idle or was revoked.',
  suggestion: 'Sign in again with POST /dashboard/session.',
});

export const csrfRefused = () => new ApiError({
  status: 403, code: 'csrf_token_invalid', title: 'Forbidden',
  detail: 'The request changes state but its X-CSRF-Token header is missing or is not this session\'s token.',
  suggestion: 'Send the csrf_token from the sign-in (or GET /dashboard/session) answer in the X-CSRF-Token header.',
});

export function clientIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}

function sessionBody(s: Pick<DashboardSession, 'userId' | 'email' | 'accountId' | 'role' | 'csrfToken'>) {
  return { user: { id: s.userId, email: s.email, account_id: s.accountId, role: s.role }, csrf_token: s.csrfToken };
}

function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('application/json').send(JSON.stringify(body));
}

export const methodNotAllowed = (path: string, allow: string) => new ApiError({
  status: 405, code: 'method_not_allowed', title: 'Method Not Allowed',
  detail: `${path} does not take this method.`, suggestion: `Use one of: ${allow}.`, headers: { Allow: allow },
});

/**
 * `POST|GET|DELETE /dashboard/session`: sign in, who am I, sign out. One handler per path that
 * dispatches on the method: these endpoints belong to the dashboard, not to the /v3 API, so they
 * stay out of its OpenAPI document (whose test lists the method routes the app registers).
 */
export function mountSessionRoutes(router: Router, deps: AppDeps, throttle: LoginThrottle): void {
  const handlers: Record<string, (req: Request, res: Response) => Promise<void>> = {};
  router.all('/dashboard/session', (req, res) => {
    const handler = Object.hasOwn(handlers, req.method) ? handlers[req.method] : undefined;
    if (!handler) throw methodNotAllowed('/dashboard/session', 'GET, POST, DELETE');
    return handler(req, res);
  });

  handlers.POST = async (req, res) => {
    const body = await readJson(req, signInBody);
    const pool = await nativePool(deps.orm);
    const who = await checkSignIn(pool, throttle, { email: body.email, password: body.password, accountId: body.account_id, ip: clientIp(req) });
    const session = await createSession(pool, { userId: who.userId, accountId: who.accountId, ip: clientIp(req), userAgent: req.headers['user-agent'] });
    res.setHeader('Set-Cookie', sessionCookie(session.token, session.expiresAt, req.secure));
    sendJson(res, 200, sessionBody({ ...who, csrfToken: session.csrfToken }));
  };

  handlers.GET = async (req, res) => {
    const session = await sessionFromRequest(deps.orm, req);
    if (!session) throw sessionRequired();
    sendJson(res, 200, sessionBody(session));
  };

  handlers.DELETE = async (req, res) => {
    const session = await sessionFromRequest(deps.orm, req);
    if (!session) throw sessionRequired();
    if (!checkCsrf(session, req)) throw csrfRefused();
    await revokeSession(await nativePool(deps.orm), session.sessionId);
    res.setHeader('Set-Cookie', clearedSessionCookie(req.secure));
    res.setHeader('Cache-Control', 'no-store');
    res.status(204).end();
  };
}
