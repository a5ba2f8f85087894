import type { MikroORM } from '@mikro-orm/postgresql';
import type { IncomingHttpHeaders } from 'node:http';
import type { Pool } from 'pg';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { nativePool } from '../../db/pool.ts';
import { newId } from '../../platform/ids.ts';
import type { DashboardRole } from './users.ts';

/**
 * Dashboard sessions. The cookie carries a random 32-byte token; the database keeps only its
 * SHA-256, so a leaked table opens no session. A session ends at `expires_at` (absolute lifetime),
 * after IDLE of inactivity, or when revoked (sign-out, member removed). The role is read from the
 * membership on every lookup, so a role change or a removal takes effect at the next request.
 */
export const SESSION_COOKIE = 'bp_session';
export const CSRF_HEADER = 'x-csrf-token';

export interface SessionTimeouts {
  /** Absolute lifetime from sign-in. */
  lifetimeMs: number;
  /** Inactivity after which the session no longer counts. */
  idleMs: number;
}

export const DEFAULT_TIMEOUTS: SessionTimeouts = { lifetimeMs: 12 * 3600_000, idleMs: 30 * 60_000 };

/** `last_seen_at` is written at most this often per session (not on every dashboard request). */
const TOUCH_EVERY_MS = 60_000;

export interface DashboardSession {
  sessionId: string;
  userId: string;
  email: string;
  accountId: string;
  role: DashboardRole;
  csrfToken: string;
}

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The value of one cookie in a Cookie header (the first one when repeated), or undefined. */
export function readCookie(headers: IncomingHttpHeaders, name: string): string | undefined {
  const header = headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export async function createSession(
  pool: Pool,
  input: { userId: string; accountId: string; ip?: string; userAgent?: string },
  timeouts: SessionTimeouts = DEFAULT_TIMEOUTS,
): Promise<{ token: string; sessionId: string; csrfToken: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const sessionId = newId('dashboardSession');
  const { rows } = await pool.query<{ expires_at: Date | string }>(
    `insert into dashboard_sessions (id, token_hash, user_id, account_id, csrf_token, expires_at, ip, user_agent)
     values ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::double precision / 1000), $7, $8) returning expires_at`,
    [sessionId, tokenHash(token), input.userId, input.accountId, csrfToken, timeouts.lifetimeMs, input.ip?.slice(0, 64) ?? null, input.userAgent?.slice(0, 512) ?? null],
  );
  return { token, sessionId, csrfToken, expiresAt: new Date(rows[0]!.expires_at) };
}

/**
 * The session the request's `bp_session` cookie opens, or null (no cookie, unknown, expired, idle,
 * revoked, or the membership is gone). Refreshes `last_seen_at` at most once a minute.
 */
export async function sessionFromRequest(
  orm: MikroORM, req: { headers: IncomingHttpHeaders }, timeouts: SessionTimeouts = DEFAULT_TIMEOUTS,
): Promise<DashboardSession | null> {
  const token = readCookie(req.headers, SESSION_COOKIE);
  if (!token || !TOKEN.test(token)) return null;
  const pool = await nativePool(orm);
  const { rows } = await pool.query<{ id: string; user_id: string; email: string; account_id: string; role: DashboardRole; csrf_token: string; stale: boolean }>({
    name: 'bp_dashboard_session',
    text: `select s.id, s.user_id, u.email, s.account_id, m.role, s.csrf_token,
                  s.last_seen_at < now() - make_interval(secs => $3::double precision / 1000) as stale
             from dashboard_sessions s
             join dashboard_users u on u.id = s.user_id
             join account_members m on m.user_id = s.user_id and m.account_id = s.account_id
            where s.token_hash = $1 and s.revoked_at is null and s.expires_at > now()
              and s.last_seen_at > now() - make_interval(secs => $2::double precision / 1000)`,
    values: [tokenHash(token), timeouts.idleMs, TOUCH_EVERY_MS],
  });
  const r = rows[0];
  if (!r) return null;
  if (r.stale) await pool.query('update dashboard_sessions set last_seen_at = now() where id = $1', [r.id]);
  return { sessionId: r.id, userId: r.user_id, email: r.email, accountId: r.account_id, role: r.role, csrfToken: r.csrf_token };
}

export async function revokeSession(pool: Pool, sessionId: string): Promise<void> {
  await pool.query('update dashboard_sessions set revoked_at = now() where id = $1 and revoked_at is null', [sessionId]);
}

/**
 * The CSRF check for a state-changing request the session cookie authenticates: the request must
 * carry `X-CSRF-Token` equal to the session's token (which a cross-site page can neither read nor
 * set; SameSite=Lax already keeps the cookie off cross-site POSTs in current browsers).
 */
export function checkCsrf(session: DashboardSession, req: { headers: IncomingHttpHeaders }): boolean {
  const sent = req.headers[CSRF_HEADER];
  if (typeof sent !== 'string') return false;
  const a = createHash('sha256').update(sent).digest();
  const b = createHash('sha256').update(session.csrfToken).digest();
  return timingSafeEqual(a, b);
}

/** The Set-Cookie value for a new session (Secure when the request came over HTTPS). */
export function sessionCookie(token: string, expiresAt: Date, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Expires=${expiresAt.toUTCString()}${secure ? '; Secure' : ''}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`;
}
