import type { Pool } from 'pg';
import type { Scope } from '../scope.ts';

/** How long a key is remembered, and how long an unfinished claim blocks retries of it. */
const RETENTION = '24 hours';
/** Only a fallback now: a claim whose owner is gone is taken over at once (see `ownerAlive`). */
const CLAIM_SECONDS = 60;
const MAX_PENDING_RELEASES = 10_000;
const RELEASE_RETRY_MS = 1000;
/** The first key of every instance's liveness advisory lock (the second: `hashtext(instance id)`). */
export const LIVENESS_LOCK_CLASS = 0x4250;

/**
 * SQL true while the API instance `owner` lives: it holds its session advisory lock
 * (`holdInstanceLock`), which PostgreSQL drops the moment its connection goes, so a killed
 * instance is seen dead at once. A claim without an owner (written before owners were recorded) counts as alive.
 */
const ownerAlive = (owner: string) => `(${owner} is null or exists (
  select 1 from pg_locks l where l.locktype = 'advisory' and l.granted and l.objsubid = 2
     and l.database = (select oid from pg_database where datname = current_database())
     and l.classid = ${LIVENESS_LOCK_CLASS}::oid and l.objid = hashtext(${owner})::oid))`;

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: Buffer };

/**
 * Idempotency records in PostgreSQL, shared by every API process. The first request with a key
 * claims it with an insert naming its instance (`owner`); concurrent requests with the same key
 * find the claim and are told the first is still running, as long as its owner lives. A claim
 * whose owner is gone (killed: its advisory lock vanished with its connection) or that was
 * released after a 5xx is taken over by the next request with the same key and body, which keeps
 * the resource id the first attempt chose (`resourceId`), so it reaches the same workflow and row.
 */
export class IdempotencyStore {
  private readonly pool: Pool;
  private readonly owner: string | null;
  private readonly pendingReleases = new Map<string, { scope: Scope; key: string }>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** `owner`: this API instance's id, whose liveness lock `holdInstanceLock` holds. */
  constructor(pool: Pool, owner: string | null = null) {
    this.pool = pool;
    this.owner = owner;
  }

  async claim(scope: Scope, key: string, fingerprint: string): Promise<Claim> {
    const claimed = await this.pool.query(
      `insert into idempotency_records as r
         (account_id, livemode, key, fingerprint, state, owner, locked_until, created_at, expires_at)
       values ($1, $2, $3, $4, 'in_progress', $5, now() + make_interval(secs => ${CLAIM_SECONDS}), now(), now() + interval '${RETENTION}')
       on conflict (account_id, livemode, key) do update set
         fingerprint = excluded.fingerprint, state = 'in_progress', owner = excluded.owner, locked_until = excluded.locked_until,
         created_at = excluded.created_at, expires_at = excluded.expires_at,
         response_status = null, response_headers = null, response_body = null,
         resource_id = case when r.expires_at < now() then null else r.resource_id end
       where r.expires_at < now()
          or (r.fingerprint = excluded.fingerprint and (
                r.state = 'released'
             or (r.state = 'in_progress' and (r.locked_until < now() or not ${ownerAlive('r.owner')}))))
       returning 1`,
      [scope.accountId, scope.livemode, key, fingerprint, this.owner],
    );
    if (claimed.rowCount) return { kind: 'claimed' };
    const { rows } = await this.pool.query<{ fingerprint: string; state: string; response_status: number; response_headers: Record<string, string>; response_body: Buffer }>(
      `select fingerprint, state, response_status, response_headers, response_body
         from idempotency_records where account_id = $1 and livemode = $2 and key = $3`,
      [scope.accountId, scope.livemode, key],
    );
    const row = rows[0];
    if (!row) return this.claim(scope, key, fingerprint); // expired and purged in between
    if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
    if (row.state !== 'completed') return { kind: 'in_progress' };
    return { kind: 'replay', status: row.response_status, headers: row.response_headers, body: row.response_body };
  }

  /**
   * The id of the resource the claimed request creates: `fresh` the first time (stored with the
   * claim), the stored one on every later attempt with the same key, even after a 5xx released it.
   */
  async resourceId(scope: Scope, key: string, fresh: string): Promise<string> {
    const { rows } = await this.pool.query<{ resource_id: string }>(
      `update idempotency_records set resource_id = coalesce(resource_id, $4)
        where account_id = $1 and livemode = $2 and key = $3 returning resource_id`,
      [scope.accountId, scope.livemode, key, fresh],
    );
    return rows[0]?.resource_id ?? fresh;
  }

  async complete(scope: Scope, key: string, status: number, headers: Record<string, string>, body: Buffer): Promise<void> {
    await this.pool.query(
      `update idempotency_records set state = 'completed', response_status = $4, response_headers = $5, response_body = $6
        where account_id = $1 and livemode = $2 and key = $3`,
      [scope.accountId, scope.livemode, key, status, headers, body],
    );
  }

  /**
   * `release`, never failing: while the database cannot be reached the release is retried in the
   * background (bounded), so a request that failed with a 503 does not leave its key blocked.
   */
  async releaseSoon(scope: Scope, key: string): Promise<void> {
    try {
      await this.release(scope, key);
    } catch {
      if (this.pendingReleases.size >= MAX_PENDING_RELEASES) return;
      this.pendingReleases.set(`${scope.accountId}\u0000${scope.livemode}\u0000${key}`, { scope: { accountId: scope.accountId, livemode: scope.livemode }, key });
      this.retryTimer ??= setTimeout(() => void this.retryReleases(), RELEASE_RETRY_MS).unref();
    }
  }

  private async retryReleases(): Promise<void> {
    this.retryTimer = null;
    for (const [id, { scope, key }] of this.pendingReleases) {
      try {
        await this.release(scope, key);
        this.pendingReleases.delete(id);
      } catch {
        break;
      }
    }
    if (this.pendingReleases.size) this.retryTimer = setTimeout(() => void this.retryReleases(), RELEASE_RETRY_MS).unref();
  }

  /**
   * Frees a claim, so the request can be retried (used when it failed on our side). A claim that
   * chose a resource id is kept as `released` with it: the failed attempt may have started the
   * resource's workflow (a Temporal deadline passed while it ran), and the retry must reach it.
   */
  async release(scope: Scope, key: string): Promise<void> {
    await this.pool.query(
      `with gone as (
         delete from idempotency_records where account_id = $1 and livemode = $2 and key = $3 and state = 'in_progress' and resource_id is null
         returning 1)
       update idempotency_records set state = 'released', owner = null
        where account_id = $1 and livemode = $2 and key = $3 and state = 'in_progress' and resource_id is not null`,
      [scope.accountId, scope.livemode, key],
    );
  }
}
