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
/** The most admissions sent in one call (a larger backlog goes in the calls after it). */
const MAX_ADMIT_BATCH = 1000;
/** How long, and for how many keys, an admitted key's context is remembered (`remembered`). */
const CONTEXT_TTL_MS = 60_000;
const MAX_CONTEXTS = 10_000;

/**
 * Added to the admission, release and heartbeat statements: their (implicit) transaction commits
 * without waiting for the WAL flush. Each of them updates rows every request of the key touches
 * (its rate-limit windows, its in-flight counter), so with a synchronous commit every admission
 * queued behind the previous one's fsync while holding those row locks. Other sessions see the
 * commit at once, as before, so the limits stay exact across API processes; what a PostgreSQL
 * crash could lose is the last few hundred milliseconds of counting (wal_writer_delay), i.e. a
 * handful of requests not counted against a window, and in-flight counts that the staleness rule
 * discards anyway.
 */
const ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true)";

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

/** What the request presents: an API key (by its SHA-256) or an OAuth access token; 401 when neither. */
type Presented = { kind: 'key'; hash: string } | { kind: 'token'; token: string };

function presented(req: Request): Presented {
  const header = req.headers.authorization;
  if (!header) {
    throw unauthorized('api_key_missing', 'No API key was sent.', 'Send your key in the header `Authorization: Bearer <key>`.');
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  // An OAuth access token (docs/oauth.md): opaque, 43 base64url characters, unlike any key's form.
  if (match && !isWellFormedKey(match[1]!) && OAUTH_ACCESS_TOKEN.test(match[1]!)) return { kind: 'token', token: match[1]! };
  if (!match || !isWellFormedKey(match[1]!)) {
    throw unauthorized('api_key_malformed', 'The Authorization header does not hold a Business Platform API key.',
      'Use `Authorization: Bearer bp_live_…` (or bp_test_…, bp_rk_…) with the full key text as it was shown at creation.');
  }
  return { kind: 'key', hash: hashKey(match[1]!) };
}

const TOKEN_REFUSALS = {
  unknown: () => unauthorized('access_token_invalid', 'This access token does not exist.',
    'Check that the whole token was sent, or get a new one from the token endpoint (/oauth/token).'),
  revoked: () => unauthorized('access_token_revoked',
    'This access token has been revoked (by the client, a reused refresh token, the client\'s removal, or the user leaving the account).',
    'Get a new access token from the token endpoint (/oauth/token).'),
  expired: () => unauthorized('access_token_expired', 'This access token has expired.',
    'Use your refresh token (grant_type=refresh_token) or the client credentials grant to get a new one.'),
};

/**
 * An OAuth access token: looked up (by its SHA-256, as the provider stores it) and counted by
 * `bp_admit_token` on the same rate-limit tables as keys, keyed by the client. It acts in the
 * client's mode, in the account the user signed in to (or the client's, for client credentials),
 * holding the permission scopes it was granted (read-only for a viewer) as a restricted key would.
 */
async function admitAccessToken(deps: AppDeps, token: string, res: Response): Promise<AuthContext> {
  // The provider keeps tokens by their SHA-256 (domain/identity/oidc-adapter.ts `tokenRowId`).
  const row = await deps.concurrency.admitToken(createHash('sha256').update(token).digest('base64url'), deps.config);
  const refusal = TOKEN_REFUSALS[row.outcome as keyof typeof TOKEN_REFUSALS];
  if (refusal) {
    admissions.inc({ outcome: ADMISSION_OUTCOME[row.outcome] });
    throw refusal();
  }
  return admitted(deps, res, row, true);
}

/** Applies the database's answer: 401 or 429 as it says, else the rate-limit headers and the key's context. */
function admitted(deps: AppDeps, res: Response, row: AdmitRow, oauth = false): AuthContext {
  admissions.inc({ outcome: ADMISSION_OUTCOME[row.outcome] });
  switch (row.outcome) {
    case 'unknown':
      throw unauthorized('api_key_invalid', 'This API key does not exist.', 'Check for a typo, or create a new key in the dashboard.');
    case 'revoked':
      throw unauthorized('api_key_revoked', 'This API key has been revoked.', 'Create a new key in the dashboard and use it instead.');
    case 'expired':
      throw unauthorized('api_key_expired', 'This API key has expired.', 'Create a new key; consider an expiration date further out and rotate keys before they expire.');
  }
  const limits = deps.config;
  const headers = rateLimitHeaders(row, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (row.outcome !== 'admitted') throw limited(row);
  const auth: AuthContext = {
    keyId: row.key_id, accountId: row.account_id, livemode: row.livemode,
    keyType: row.key_type, permissions: row.permissions, tier: row.tier, ...(oauth ? { oauth: true } : {}),
  };
  state(res).auth = auth;
  return auth;
}

/**
 * Authentication and rate limiting, in one database round trip (`bp_admit_batch`): the key is looked
 * up by its SHA-256, then the minute, day and concurrency limits are counted in shared storage so
 * every API process sees the same numbers. Sets the rate-limit headers on every admitted or
 * limited response and releases the concurrency slot when the response is done.
 */
export async function admit(deps: AppDeps, req: Request, res: Response): Promise<AuthContext> {
  return admitPresented(deps, presented(req), res);
}

async function admitPresented(deps: AppDeps, what: Presented, res: Response): Promise<AuthContext> {
  const auth = what.kind === 'token'
    ? await admitAccessToken(deps, what.token, res)
    : admitted(deps, res, await deps.concurrency.admit(what.hash, deps.config));
  // The slot is given back before the response is written (so a client that waits for its answer
  // never finds its own slot still taken), or when the connection closes without an answer.
  deps.concurrency.started(auth.keyId);
  let released: Promise<void> | null = null;
  const release = () => (released ??= deps.concurrency.finished(auth.keyId));
  state(res).release = release;
  res.once('close', () => void release());
  return auth;
}

/**
 * Admission for a read-only request (a route marked `readOnly`), in the time of one round trip:
 * when this process has admitted the key recently, the read starts at once with the key's context
 * from then, beside its admission. The database's admission stays the only judge: a revoked,
 * expired or limited key gets its 401 or 429 and the read is thrown away; an error of the read
 * (a 404, a bad parameter) is answered only once the key is admitted, as without the overlap. The
 * request is admitted as `instant` (it takes no concurrency slot: it is answered as soon as it is
 * admitted, so there is nothing to release and no second round trip). Without a remembered
 * context, or if the key's context changed, it is admitted and read one after the other.
 */
export async function admitAndRead<T>(
  deps: AppDeps, req: Request, res: Response, permission: Permission, read: (auth: AuthContext) => Promise<T>,
): Promise<T> {
  const what = presented(req);
  // Access tokens are not remembered: each is looked up (it may be revoked at any moment).
  const remembered = what.kind === 'key' ? deps.concurrency.remembered(what.hash) : undefined;
  if (what.kind === 'token' || !remembered || !permits(remembered, permission)) {
    const auth = await admitPresented(deps, what, res);
    requirePermission(auth, permission);
    return read(auth);
  }
  // Settled either way, so a read that fails before the admission answers is not an unhandled rejection.
  const early = read(remembered).then((value) => ({ value }), (error: unknown) => ({ error }));
  const auth = admitted(deps, res, await deps.concurrency.admit(what.hash, deps.config, true));
  requirePermission(auth, permission);
  if (!sameContext(auth, remembered)) return read(auth);
  const outcome = await early;
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

function sameContext(a: AuthContext, b: AuthContext): boolean {
  return a.keyId === b.keyId && a.accountId === b.accountId && a.livemode === b.livemode && a.keyType === b.keyType
    && a.tier === b.tier && a.permissions.length === b.permissions.length && a.permissions.every((p, i) => p === b.permissions[i]);
}

function permits(auth: AuthContext, permission: Permission): boolean {
  return allows(auth.keyType === 'restricted' ? auth.permissions : ['*'], permission);
}

export function requirePermission(auth: AuthContext, permission: Permission): void {
  if (permits(auth, permission)) return;
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
  private admissions: { keyHash: string; instant: boolean; resolve: (row: AdmitRow) => void; reject: (err: Error) => void }[] = [];
  /** The context of keys admitted lately, by key hash (see `remembered`). */
  private readonly contexts = new Map<string, { auth: AuthContext; until: number }>();
  private admitScheduled: NodeJS.Immediate | null = null;
  /** A `bp_admit_batch` call is in the database (the next batch waits for it). */
  private admitting = false;
  private limits: Limits | null = null;
  /** A `bp_release` call is in the database (the next subtraction waits for it). */
  private releasing: Promise<void> | null = null;
  private nextFlush: Promise<void> | null = null;
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
   * Authenticates and counts a request. Admissions go to the database in batches
   * (`bp_admit_batch`), one batch in flight at a time: what is asked for while a batch is in the
   * database waits for it and goes in the next one. Two batches of one instance would only queue
   * behind each other's locks on the key's counter rows anyway (every admission of a key updates
   * the same rows); one at a time, a burst of N requests costs about one round trip, not N
   * transactions convoying on a row lock.
   */
  admit(keyHash: string, limits: Limits, instant = false): Promise<AdmitRow> {
    return new Promise((resolve, reject) => {
      this.admissions.push({ keyHash, instant, resolve, reject });
      this.limits = limits;
      if (!this.admitting) {
        this.admitScheduled ??= setImmediate(() => {
          this.admitScheduled = null;
          this.admitBatch();
        });
      }
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

  private admitBatch(): void {
    const batch = this.admissions.splice(0, MAX_ADMIT_BATCH);
    if (!batch.length) return;
    const limits = this.limits!;
    this.admitting = true;
    this.pool.query<AdmitRow & { ord: number }>({
      name: 'bp_admit_batch',
      text: `select *, ${ASYNC_COMMIT} from bp_admit_batch($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      values: [batch.map((a) => a.keyHash), this.instanceId, limits.RATE_LIMIT_PER_MINUTE,
        limits.RATE_LIMIT_PER_MINUTE_PREMIUM, limits.RATE_LIMIT_PER_DAY, limits.RATE_LIMIT_CONCURRENCY, STALE_SECONDS,
        Math.round(this.clock.offsetMs), batch.map((a) => a.instant)],
    }).then(
      ({ rows }) => {
        for (const row of rows) {
          const admission = batch[row.ord - 1]!;
          this.remember(admission.keyHash, row);
          admission.resolve(row);
        }
      },
      (err: Error) => {
        for (const a of batch) a.reject(err);
      },
    ).finally(() => {
      this.admitting = false;
      // What came while this batch was in the database goes now, together.
      if (this.admissions.length) this.admitBatch();
    });
  }

  /**
   * The context (account, mode, type, permissions, tier) the database gave this key at an
   * admission in the last CONTEXT_TTL_MS, if any. Only a hint to start a read early
   * (`admitAndRead`): every request is still admitted by the database, which alone decides.
   */
  remembered(keyHash: string): AuthContext | undefined {
    const entry = this.contexts.get(keyHash);
    if (entry && entry.until > Date.now()) return entry.auth;
    if (entry) this.contexts.delete(keyHash);
    return undefined;
  }

  private remember(keyHash: string, row: AdmitRow): void {
    if (row.outcome === 'unknown' || row.outcome === 'revoked' || row.outcome === 'expired') {
      this.contexts.delete(keyHash);
      return;
    }
    if (this.contexts.has(keyHash)) this.contexts.delete(keyHash);
    else if (this.contexts.size >= MAX_CONTEXTS) this.contexts.delete(this.contexts.keys().next().value!);
    this.contexts.set(keyHash, {
      until: Date.now() + CONTEXT_TTL_MS,
      auth: {
        keyId: row.key_id, accountId: row.account_id, livemode: row.livemode,
        keyType: row.key_type, permissions: row.permissions, tier: row.tier,
      },
    });
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
   * One subtraction is in the database at a time (`bp_release` locks the instance's counter rows,
   * which every admission of the key also updates): what finishes meanwhile is subtracted in one
   * call right after it.
   */
  flush(): Promise<void> {
    if (this.releasing) {
      // One follow-up, once the subtraction in flight is done, with everything finished until then.
      return (this.nextFlush ??= this.releasing.then(() => {
        this.nextFlush = null;
        return this.flush();
      }));
    }
    const waiting = this.waiting;
    this.waiting = [];
    const batch = [...this.pending];
    this.pending = new Map();
    if (!batch.length && !waiting.length) return Promise.resolve();
    const done: Promise<void> = (batch.length ? this.release(batch) : Promise.resolve()).finally(() => {
      // A failed subtraction is retried in the background; the responses do not wait for it.
      for (const resolve of waiting) resolve();
      this.inFlight.delete(done);
      this.releasing = null;
    });
    this.releasing = done;
    this.inFlight.add(done);
    return done;
  }

  private async release(batch: [string, number][]): Promise<void> {
    try {
      await this.pool.query({
        name: 'bp_release',
        text: `select bp_release($1, $2, $3), ${ASYNC_COMMIT}`,
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
      await this.pool.query(`select bp_heartbeat($1, $2), ${ASYNC_COMMIT}`, [this.instanceId, [...this.local.keys()]]);
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
