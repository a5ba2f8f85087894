import type { Pool } from 'pg';
import { createHash } from 'node:crypto';
import { findClientRow } from './clients.ts';

/**
 * oidc-provider's storage, in PostgreSQL (`oidc_models`): one row per model and id, the provider's
 * JSON payload, its expiry, and the columns it looks rows up by (grant, uid, user code).
 *
 * - Bearer values (access, refresh and client-credentials tokens, authorization codes, session ids)
 *   are kept as their SHA-256 only: the row id is the hash and the payload loses its `jti`, so a
 *   leaked table opens nothing. `tokenRowId` is the same hash, for /v3 admission (`bp_admit_token`).
 * - A destroyed token is marked revoked, not deleted: admission then says "revoked" instead of
 *   "unknown". Other models are deleted.
 * - Clients are read from `oauth_clients` (registered through the dashboard or the CLI), never
 *   written by the provider (no dynamic registration).
 */
const HASHED = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'ClientCredentials', 'DeviceCode', 'BackchannelAuthenticationRequest', 'Session']);
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

export function tokenRowId(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export type AdapterPayload = Record<string, unknown>;

export interface ClientMetadataSource {
  /** Client metadata for the provider, from a row of `oauth_clients`. */
  clientMetadata(row: NonNullable<Awaited<ReturnType<typeof findClientRow>>>): AdapterPayload;
}

export class PostgresOidcAdapter {
  private readonly model: string;
  private readonly pool: () => Promise<Pool>;
  private readonly clients: ClientMetadataSource;

  constructor(model: string, pool: () => Promise<Pool>, clients: ClientMetadataSource) {
    this.model = model;
    this.pool = pool;
    this.clients = clients;
  }

  private rowId(id: string): string {
    return HASHED.has(this.model) ? tokenRowId(id) : id;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    if (this.model === 'Client') throw new Error('clients are registered through the dashboard or the CLI');
    const stored = { ...payload };
    if (HASHED.has(this.model)) delete stored.jti;
    await (await this.pool()).query(
      `insert into oidc_models (model, id, payload, grant_id, uid, user_code, expires_at)
       values ($1, $2, $3, $4, $5, $6, case when $7::double precision is null then null else now() + make_interval(secs => $7) end)
       on conflict (model, id) do update set payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
         user_code = excluded.user_code, expires_at = excluded.expires_at`,
      [this.model, this.rowId(id), stored, GRANTABLE.has(this.model) ? payload.grantId ?? null : null,
        payload.uid ?? null, payload.userCode ?? null, expiresIn ?? null],
    );
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (typeof id !== 'string' || id.length > 512) return undefined;
    if (this.model === 'Client') {
      const row = await findClientRow(await this.pool(), id);
      return row ? this.clients.clientMetadata(row) : undefined;
    }
    return this.findWhere('id = $2', this.rowId(id), id);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    if (typeof uid !== 'string' || uid.length > 512) return undefined;
    return this.findWhere('uid = $2', uid);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    if (typeof userCode !== 'string' || userCode.length > 512) return undefined;
    return this.findWhere('user_code = $2', userCode);
  }

  private async findWhere(where: string, value: string, rawId?: string): Promise<AdapterPayload | undefined> {
    const { rows } = await (await this.pool()).query<{ payload: AdapterPayload; consumed_at: Date | null }>(
      `select payload, consumed_at from oidc_models
        where model = $1 and ${where} and revoked_at is null and (expires_at is null or expires_at > now())`,
      [this.model, value],
    );
    const row = rows[0];
    if (!row) return undefined;
    const payload = { ...row.payload };
    if (rawId !== undefined && HASHED.has(this.model)) payload.jti = rawId;
    if (row.consumed_at) payload.consumed = Math.floor(new Date(row.consumed_at).getTime() / 1000);
    return payload;
  }

  async consume(id: string): Promise<void> {
    await (await this.pool()).query(
      'update oidc_models set consumed_at = now() where model = $1 and id = $2 and consumed_at is null', [this.model, this.rowId(id)],
    );
  }

  async destroy(id: string): Promise<void> {
    const pool = await this.pool();
    if (HASHED.has(this.model) && this.model !== 'Session') {
      await pool.query('update oidc_models set revoked_at = now() where model = $1 and id = $2 and revoked_at is null', [this.model, this.rowId(id)]);
    } else {
      await pool.query('delete from oidc_models where model = $1 and id = $2', [this.model, this.rowId(id)]);
    }
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await (await this.pool()).query(
      'update oidc_models set revoked_at = now() where grant_id = $1 and revoked_at is null', [grantId],
    );
  }
}

/** Expired rows are of no use to anyone: deleted a day after expiry (revoked tokens answer "revoked" until then). */
export async function purgeExpiredOidcModels(pool: Pool): Promise<number> {
  const { rowCount } = await pool.query(`delete from oidc_models where expires_at < now() - interval '1 day'`);
  return rowCount ?? 0;
}
