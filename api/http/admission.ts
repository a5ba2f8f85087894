import type { Request, Response } from 'express';
import type { Pool } from 'pg';
import { createHash, randomUUID } from 'node:crypto';
import { hashKey, isWellFormedKey } from '../../domain/accounts/keys.ts';
import { allows, type Permission } from '../../domain/permissions.ts';
import { ApiError } from '../../platform/errors.ts';
import type { AppDeps } from './deps.ts';
import { state, type AuthContext } from './context.ts';
import { admissions } from '../../platform/metrics.ts';

/** The metric's outcome for each admission result (`bp_admission_decisions_total`). */
const ADMISSION_OUTCOME: Record<string, string> = {
  admitted: 'admitted', minute_limited: 'rate_limited', day_limited: 'rate_limited', concurrency_limited: 'concurrency_limited',
  unknown: 'unauthenticated', revoked: 'unauthenticated', expired: 'unauthenticated',
};

/** An instance's in-flight count stops counting this long after its last heartbeat (a crash). */
const STALE_SECONDS = 30;
const HEARTBEAT_MS = 10_000;

/** oidc-provider's opaque access tokens: 43 base64url characters (API keys all start with bp_). */
const OAUTH_ACCESS_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The clock the minute and day windows are counted on: the database's, shifted by `offsetMs`. Always
 * 0 in production; a test shifts it to start a burst just after a window boundary.
 */
export interface RateLimitClock {
  offsetMs: number;
}

type Limits = Pick<AppDeps['config'], 'RATE_LIMIT_PER_MINUTE' | 'RATE_LIMIT_PER_MINUTE_PREMIUM' | 'RATE_LIMIT_PER_DAY' | 'RATE_LIMIT_CONCURRENCY'>;

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
 * Authentication and rate limiting, in one database round trip (`bp_admit_batch`): the key is looked
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
  // An OAuth access token (docs/oauth.md): opaque, 43 base64url characters, unlike any key's form.
  if (match && !isWellFormedKey(match[1]!) && OAUTH_ACCESS_TOKEN.test(match[1]!)) return admitAccessToken(deps, match[1]!, res);
  if (!match || !isWellFormedKey(match[1]!)) {
    throw unauthorized('api_key_malformed', 'The Authorization header does not hold a Business Platform API key.',
      'Use `Authorization: Bearer bp_live_…` (or bp_test_…, bp_rk_…) with the full key text as it was shown at creation.');
  }
  const limits = deps.config;
  const row = await deps.concurrency.admit(hashKey(match[1]!), limits);
  admissions.inc({ outcome: ADMISSION_OUTCOME[row.outcome] });
  switch (row.outcome) {
    case 'unknown':
      throw unauthorized('api_key_invalid', 'This API key does not exist.', 'Check for a typo, or create a new key in the dashboard.');
    case 'revoked':
      throw unauthorized('api_key_revoked', 'This API key has been revoked.', 'Create a new key in the dashboard and use it instead.');
    case 'expired':
      throw unauthorized('api_key_expired', 'This API key has expired.', 'Create a new key; consider an expiration date further out and rotate keys before they expire.');
  }

  return admitted(deps, row, res);
}

/**
 * An OAuth access token: looked up (by its SHA-256, as the provider stores it) and counted by
 * `bp_admit_token` on the same rate-limit tables as keys, keyed by the client. It acts in the
 * client's mode, in the account the user signed in to (or the client's, for client credentials),
 * holding the permission scopes it was granted (read-only for a viewer) as a restricted key would.
 */
async function admitAccessToken(deps: AppDeps, token: string, res: Response): Promise<AuthContext> {
  // The provider keeps tokens by their SHA-256 (domain/identity/oidc-adapter.ts `tokenRowId`).
  const row = await deps.concurrency.admitToken(createHash('sha256').update(token).digest('base64url'), deps.config);
  admissions.inc({ outcome: ADMISSION_OUTCOME[row.outcome] });
  switch (row.outcome) {
    case 'unknown':
      throw unauthorized('access_token_invalid', 'This access token does not exist.', 'Check that the whole token was sent, or get a new one from the token endpoint (/oauth/token).');
    case 'revoked':
      throw unauthorized('access_token_revoked', 'This access token has been revoked (by the client, a reused refresh token, the client\'s removal, or the user leaving the account).', 'Get a new access token from the token endpoint (/oauth/token).');
    case 'expired':
      throw unauthorized('access_token_expired', 'This access token has expired.', 'Use your refresh token (grant_type=refresh_token) or the client credentials grant to get a new one.');
  }
  return admitted(deps, row, res, true);
}

function admitted(deps: AppDeps, row: AdmitRow, res: Response, oauth = false): AuthContext {
  const limits = deps.config;
  const headers = rateLimitHeaders(row, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);

  if (row.outcome !== 'admitted') throw limited(row);

  // The slot is given back before the response is written (so a client that waits for its answer
  // never finds its own slot still taken), or when the connection closes without an answer.
  deps.concurrency.started(row.key_id);
  let released: Promise<void> | null = null;
  const release = () => (released ??= deps.concurrency.finished(row.key_id));
  state(res).release = release;
  res.once('close', () => void release());
  const auth: AuthContext = {
    keyId: row.key_id, accountId: row.account_id, livemode: row.livemode,
    keyType: row.key_type, permissions: row.permissions, tier: row.tier, ...(oauth ? { oauth: true } : {}),
  };
  state(res).auth = auth;
  return auth;
}

export function requirePermission(auth: AuthContext, permission: Permission): void {
  const granted = auth.keyType === 'restricted' ? auth.permissions : ['*'];
  if (allows(granted, permission)) return;
  if (auth.oauth) {
    throw new ApiError({
      status: 403, code: 'permission_denied', title: 'Forbidden',
      detail: `This access token lacks the scope ${permission}.`,
      suggestion: `Authorize again asking for ${permission} (or ${permission.replace(':read', ':write')}) in \`scope\`; the client must be registered with that scope, and a viewer's tokens only read.`,
      extensions: { required_permission: permission, required_scope: permission },
      headers: { 'WWW-Authenticate': `Bearer realm="business-platform", error="insufficient_scope", scope="${permission}"` },
    });
  }
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
 * This instance's side of the concurrency limit. Each API instance has one counter row per key
 * (`concurrency_counters`); admissions add to it in the database. Finished requests are subtracted
 * in bulk at the end of the event-loop turn in which they finished (their responses wait for it).
 * Every statement locks the instance's rows in key order, so none can deadlock another. While
 * requests are in flight, a heartbeat keeps the instance's rows counting; if the instance dies, its
 * rows go stale and stop counting after STALE_SECONDS.
 */
export class ConcurrencyTracker {
  readonly instanceId = randomUUID();
  private readonly local = new Map<string, number>();
  private pending = new Map<string, number>();
  private scheduled: NodeJS.Immediate | null = null;
  private retry: NodeJS.Timeout | null = null;
  private admissions: { keyHash: string; resolve: (row: AdmitRow) => void; reject: (err: Error) => void }[] = [];
  private admitScheduled: NodeJS.Immediate | null = null;
  private waiting: (() => void)[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly pool: Pool;
  private readonly onError: (err: Error) => void;
  private readonly clock: RateLimitClock;

  constructor(pool: Pool, onError: (err: Error) => void, clock: RateLimitClock = { offsetMs: 0 }) {
    this.pool = pool;
    this.onError = onError;
    this.clock = clock;
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS).unref();
  }

  /**
   * Authenticates and counts a request. Every admission asked for in the same event-loop turn goes
   * to the database in one call (`bp_admit_batch`), so under load one round trip admits many.
   */
  admit(keyHash: string, limits: Limits): Promise<AdmitRow> {
    return new Promise((resolve, reject) => {
      this.admissions.push({ keyHash, resolve, reject });
      this.admitScheduled ??= setImmediate(() => {
        this.admitScheduled = null;
        this.admitBatch(limits);
      });
    });
  }

  /** Authenticates and counts an OAuth access token (by its hash): `bp_admit_token`, one round trip. */
  async admitToken(tokenHash: string, limits: Limits): Promise<AdmitRow> {
    const { rows } = await this.pool.query<AdmitRow>({
      name: 'bp_admit_token',
      text: 'select * from bp_admit_token($1, $2, $3, $4, $5, $6, $7, $8)',
      values: [tokenHash, this.instanceId, limits.RATE_LIMIT_PER_MINUTE, limits.RATE_LIMIT_PER_MINUTE_PREMIUM,
        limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY, STALE_SECONDS, Math.round(this.clock.offsetMs)],
    });
    return rows[0]!;
  }

  private admitBatch(limits: Limits): void {
    const batch = this.admissions;
    this.admissions = [];
    this.pool.query<AdmitRow & { ord: number }>({
      name: 'bp_admit_batch',
      text: 'select * from bp_admit_batch($1, $2, $3, $4, $5, $6, $7, $8)',
      values: [batch.map((a) => a.keyHash), this.instanceId, limits.RATE_LIMIT_PER_MINUTE,
        limits.RATE_LIMIT_PER_MINUTE_PREMIUM, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY, STALE_SECONDS, Math.round(this.clock.offsetMs)],
    }).then(
      ({ rows }) => {
        for (const row of rows) batch[row.ord - 1]!.resolve(row);
      },
      (err: Error) => {
        for (const a of batch) a.reject(err);
      },
    );
  }

  started(keyId: string): void {
    this.local.set(keyId, (this.local.get(keyId) ?? 0) + 1);
  }

  /** Counts a request as finished; resolves once the database has subtracted it. */
  finished(keyId: string): Promise<void> {
    const left = (this.local.get(keyId) ?? 1) - 1;
    if (left > 0) this.local.set(keyId, left);
    else this.local.delete(keyId);
    this.pending.set(keyId, (this.pending.get(keyId) ?? 0) + 1);
    // Batched with every request that finishes in this event-loop turn.
    this.scheduled ??= setImmediate(() => {
      this.scheduled = null;
      void this.flush();
    });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /**
   * Subtracts what has finished; resolves once everything finished before the call is counted.
   * Several subtractions may be in flight at once: `bp_release` locks the instance's rows in key
   * order, as admissions and heartbeats do, so they wait for each other but never deadlock.
   */
  flush(): Promise<void> {
    const waiting = this.waiting;
    this.waiting = [];
    const batch = [...this.pending];
    this.pending = new Map();
    const done: Promise<void> = (batch.length ? this.release(batch) : Promise.resolve()).finally(() => {
      // A failed subtraction is retried in the background; the responses do not wait for it.
      for (const resolve of waiting) resolve();
      this.inFlight.delete(done);
    });
    this.inFlight.add(done);
    return done;
  }

  private async release(batch: [string, number][]): Promise<void> {
    try {
      await this.pool.query({
        name: 'bp_release',
        text: 'select bp_release($1, $2, $3)',
        values: [this.instanceId, batch.map(([k]) => k), batch.map(([, n]) => n)],
      });
    } catch (err) {
      // Not lost: the counts go back and are sent again shortly.
      for (const [k, n] of batch) this.pending.set(k, (this.pending.get(k) ?? 0) + n);
      this.retry ??= setTimeout(() => {
        this.retry = null;
        void this.flush();
      }, 200).unref();
      this.onError(err as Error);
    }
  }

  private async beat(): Promise<void> {
    if (!this.local.size) return;
    try {
      await this.pool.query('select bp_heartbeat($1, $2)', [this.instanceId, [...this.local.keys()]]);
    } catch (err) {
      this.onError(err as Error);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    if (this.scheduled) clearImmediate(this.scheduled);
    if (this.retry) clearTimeout(this.retry);
    this.scheduled = null;
    await this.flush();
    await Promise.all(this.inFlight);
  }
}
