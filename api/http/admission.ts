import type { Request, Response } from 'express';
import type { Pool } from 'pg';
import { randomUUID } from 'node:crypto';
import { hashKey, isWellFormedKey } from '../../domain/accounts/keys.ts';
import { allows, type Permission } from '../../domain/permissions.ts';
import { ApiError } from '../../platform/errors.ts';
import type { AppDeps } from '../deps.ts';
import { state, type AuthContext } from './context.ts';

/** How long a concurrency slot outlives a process that died holding it. */
const LEASE_SECONDS = 60;

interface AdmitRow {
  outcome: 'unknown' | 'revoked' | 'expired' | 'minute_limited' | 'day_limited' | 'concurrency_limited' | 'admitted';
  key_id: string;
  account_id: string;
  key_type: AuthContext['keyType'];
  livemode: boolean;
  permissions: string[];
  tier: AuthContext['tier'];
  minute_limit: number;
  minute_count: number;
  day_count: number;
  in_flight: number;
  now_epoch_ms: string;
}

const unauthorized = (code: string, detail: string, suggestion: string) =>
  new ApiError({
    status: 401, code, title: 'Unauthorized', detail, suggestion,
    headers: { 'WWW-Authenticate': 'Bearer realm="business-platform"' },
  });

/**
 * Authentication and rate limiting, in one database round trip (`bp_admit`): the key is looked
 * up by its SHA-256, then the minute, day and concurrency limits are counted in shared storage so
 * every API process sees the same numbers. Sets the rate-limit headers on every admitted or
 * limited response and releases the concurrency slot when the response is done.
 */
export async function admit(deps: AppDeps, req: Request, res: Response): Promise<AuthContext> {
  const header = req.headers.authorization;
  if (!header) {
    throw unauthorized('api_key_missing', 'No API key was sent.', 'Send your key in the header `Authorization: Bearer <key>`.');
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match || !isWellFormedKey(match[1]!)) {
    throw unauthorized('api_key_malformed', 'The Authorization header does not hold a Business Platform API key.',
      'Use `Authorization: Bearer bp_live_…` (or bp_test_…, bp_rk_…) with the full key text as it was shown at creation.');
  }
  const limits = deps.config;
  const leaseId = randomUUID();
  const { rows } = await deps.pool.query<AdmitRow>({
    name: 'bp_admit',
    text: 'select * from bp_admit($1, $2, $3, $4, $5, $6, $7, $8)',
    values: [hashKey(match[1]!), leaseId, deps.leases.take(), limits.RATE_LIMIT_PER_MINUTE,
      limits.RATE_LIMIT_PER_MINUTE_PREMIUM, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY, LEASE_SECONDS],
  });
  const row = rows[0]!;
  switch (row.outcome) {
    case 'unknown':
      throw unauthorized('api_key_invalid', 'This API key does not exist.', 'Check for a typo, or create a new key in the dashboard.');
    case 'revoked':
      throw unauthorized('api_key_revoked', 'This API key has been revoked.', 'Create a new key in the dashboard and use it instead.');
    case 'expired':
      throw unauthorized('api_key_expired', 'This API key has expired.', 'Create a new key; consider an expiration date further out and rotate keys before they expire.');
  }

  const headers = rateLimitHeaders(row, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);

  if (row.outcome !== 'admitted') throw limited(row);

  res.once('close', () => deps.leases.release(leaseId));
  const auth: AuthContext = {
    keyId: row.key_id, accountId: row.account_id, livemode: row.livemode,
    keyType: row.key_type, permissions: row.permissions, tier: row.tier,
  };
  state(res).auth = auth;
  return auth;
}

export function requirePermission(auth: AuthContext, permission: Permission): void {
  const granted = auth.keyType === 'restricted' ? auth.permissions : ['*'];
  if (allows(granted, permission)) return;
  throw new ApiError({
    status: 403, code: 'permission_denied', title: 'Forbidden',
    detail: `This restricted key lacks the permission ${permission}.`,
    suggestion: `Create a restricted key that includes ${permission} (or ${permission.replace(':read', ':write')}), or use a standard key.`,
    extensions: { required_permission: permission },
  });
}

function windows(nowMs: number) {
  const minuteReset = Math.floor(nowMs / 60_000) * 60 + 60;
  const dayReset = Math.floor(nowMs / 86_400_000) * 86_400 + 86_400;
  const now = Math.floor(nowMs / 1000);
  return { now, minuteReset, dayReset };
}

function rateLimitHeaders(row: AdmitRow, dayLimit: number, concurrency: number): Record<string, string> {
  const { now, minuteReset, dayReset } = windows(Number(row.now_epoch_ms));
  const minuteLeft = Math.max(0, row.minute_limit - row.minute_count);
  const dayLeft = Math.max(0, dayLimit - row.day_count);
  const slotsLeft = Math.max(0, concurrency - row.in_flight);
  return {
    'X-RateLimit-Limit': String(row.minute_limit),
    'X-RateLimit-Remaining': String(minuteLeft),
    'X-RateLimit-Reset': String(minuteReset),
    'RateLimit-Policy': `"minute";q=${row.minute_limit};w=60, "day";q=${dayLimit};w=86400, "concurrency";q=${concurrency}`,
    'RateLimit': `"minute";r=${minuteLeft};t=${minuteReset - now}, "day";r=${dayLeft};t=${dayReset - now}, "concurrency";r=${slotsLeft}`,
  };
}

function limited(row: AdmitRow): ApiError {
  const { now, minuteReset, dayReset } = windows(Number(row.now_epoch_ms));
  if (row.outcome === 'concurrency_limited') {
    return new ApiError({
      status: 429, code: 'concurrency_limited', title: 'Too Many Requests',
      detail: `This key already has ${row.in_flight} requests in progress, the most allowed at once.`,
      suggestion: 'Wait for a request in progress to finish before sending another; limit your client\'s parallelism.',
      headers: { 'Retry-After': '1' },
    });
  }
  const minute = row.outcome === 'minute_limited';
  const retryAfter = Math.max(1, (minute ? minuteReset : dayReset) - now);
  return new ApiError({
    status: 429, code: 'rate_limited', title: 'Too Many Requests',
    detail: minute
      ? `The minute limit of ${row.minute_limit} requests for this key is used up.`
      : 'The daily limit of requests for this key is used up.',
    suggestion: `Retry after ${retryAfter} seconds${minute && row.tier === 'standard' ? ', or move the account to the premium tier for a higher limit' : ''}.`,
    headers: { 'Retry-After': String(retryAfter) },
    extensions: { limit: minute ? 'minute' : 'day' },
  });
}

/**
 * Concurrency slots of finished requests, released in bulk: the next admission carries them to
 * the database in its own round trip, and a short timer releases them when no request follows.
 */
export class LeaseReleaser {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly pool: Pool;
  private readonly onError: (err: Error) => void;
  private readonly delayMs: number;

  constructor(pool: Pool, onError: (err: Error) => void, delayMs = 50) {
    this.pool = pool;
    this.onError = onError;
    this.delayMs = delayMs;
  }

  release(leaseId: string): void {
    this.pending.push(leaseId);
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs).unref();
  }

  /** Hands the pending releases to an admission, which deletes them first. */
  take(): string[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  async flush(): Promise<void> {
    this.timer = null;
    const ids = this.take();
    if (!ids.length) return;
    await this.pool.query('delete from concurrency_leases where lease_id = any($1)', [ids]).then(
      () => undefined,
      (err: Error) => this.onError(err),
    );
  }
}
