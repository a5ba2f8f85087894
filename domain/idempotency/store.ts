import type { Pool } from 'pg';
import type { Scope } from '../scope.ts';

/** How long a key is remembered, and how long an unfinished claim blocks retries of it. */
const RETENTION = '24 hours';
const CLAIM_SECONDS = 60;

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; headers: Record<string, string>; body: Buffer };

/**
 * Idempotency records in PostgreSQL, shared by every API process. The first request with a key
 * claims it with an insert; concurrent requests with the same key find the claim and are told the
 * first is still running. A claim whose owner died lapses after CLAIM_SECONDS.
 */
export class IdempotencyStore {
  private readonly pool: Pool;
  constructor(pool: Pool) {
    this.pool = pool;
  }

  async claim(scope: Scope, key: string, fingerprint: string): Promise<Claim> {
    const claimed = await this.pool.query(
      `insert into idempotency_records as r
         (account_id, livemode, key, fingerprint, state, locked_until, created_at, expires_at)
       values ($1, $2, $3, $4, 'in_progress', now() + make_interval(secs => ${CLAIM_SECONDS}), now(), now() + interval '${RETENTION}')
       on conflict (account_id, livemode, key) do update set
         fingerprint = excluded.fingerprint, state = 'in_progress', locked_until = excluded.locked_until,
         created_at = excluded.created_at, expires_at = excluded.expires_at,
         response_status = null, response_headers = null, response_body = null
       where r.expires_at < now()
          or (r.state = 'in_progress' and r.locked_until < now() and r.fingerprint = excluded.fingerprint)
       returning 1`,
      [scope.accountId, scope.livemode, key, fingerprint],
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

  async complete(scope: Scope, key: string, status: number, headers: Record<string, string>, body: Buffer): Promise<void> {
    await this.pool.query(
      `update idempotency_records set state = 'completed', response_status = $4, response_headers = $5, response_body = $6
        where account_id = $1 and livemode = $2 and key = $3`,
      [scope.accountId, scope.livemode, key, status, headers, body],
    );
  }

  /** Forgets a claim, so the request can be retried (used when it failed on our side). */
  async release(scope: Scope, key: string): Promise<void> {
    await this.pool.query(
      `delete from idempotency_records where account_id = $1 and livemode = $2 and key = $3 and state = 'in_progress'`,
      [scope.accountId, scope.livemode, key],
    );
  }
}
