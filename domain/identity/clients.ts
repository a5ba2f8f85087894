import type { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { createHash, randomBytes } from 'node:crypto';
import { nativePool } from '../../db/pool.ts';
import { ApiError, conflict, validationFailed, type FieldError } from '../../platform/errors.ts';
import { isId, newId } from '../../platform/ids.ts';
import { iso } from './users.ts';

/**
 * OAuth 2.0 clients of an account. A client is registered in one mode (test or live): its tokens
 * act in that mode, as a key does. A confidential client gets a secret, shown once and stored as
 * its SHA-256 (the provider compares hashes: see api/v3/identity/oidc.ts `hashClientSecrets`); a
 * public client (a browser or native app) has none and must use PKCE. A first-party client (the
 * platform's own apps) skips the consent screen.
 */
export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const OIDC_SCOPES = ['openid', 'email', 'profile', 'offline_access'] as const;

export interface OAuthClientView {
  object: 'oauth_client';
  id: string;
  client_id: string;
  account_id: string;
  name: string;
  type: 'public' | 'confidential';
  mode: 'live' | 'test';
  first_party: boolean;
  redirect_uris: string[];
  grant_types: GrantType[];
  scopes: string[];
  status: 'active' | 'revoked';
  created_at: string;
  revoked_at: string | null;
}

export interface CreateOAuthClientInput {
  accountId: string;
  name: string;
  type: 'public' | 'confidential';
  redirectUris: string[];
  grantTypes: GrantType[];
  scopes: string[];
  firstParty?: boolean;
  /** The mode its tokens act in; test unless said. */
  mode?: 'live' | 'test';
}

interface ClientRow {
  id: string; account_id: string; name: string; type: 'public' | 'confidential'; livemode: boolean; first_party: boolean;
  secret_hash: string | null; redirect_uris: string[]; grant_types: GrantType[]; scopes: string[];
  status: 'active' | 'revoked'; created_at: Date | string; revoked_at: Date | string | null;
}

export function clientView(r: ClientRow): OAuthClientView {
  return {
    object: 'oauth_client', id: r.id, client_id: r.id, account_id: r.account_id, name: r.name, type: r.type,
    mode: r.livemode ? 'live' : 'test', first_party: r.first_party, redirect_uris: r.redirect_uris, grant_types: r.grant_types,
    scopes: r.scopes, status: r.status, created_at: iso(r.created_at), revoked_at: r.revoked_at ? iso(r.revoked_at) : null,
  };
}

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

const PERMISSION_SCOPE = /^[a-z][a-z_]{0,39}:(read|write)$/;
const LOOPBACK = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?\//;

function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri.length > 2000) return 'must be an absolute URL of at most 2000 characters';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URL such as https://app.example.com/callback';
  }
  if (url.hash) return 'must not contain a fragment (#…)';
  if (url.protocol === 'https:' || LOOPBACK.test(uri)) return null;
  // A native app's private-use scheme (RFC 8252): reverse domain name, e.g. com.example.app:/callback.
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return null;
  return 'must use https (http only for localhost / 127.0.0.1), or a private-use scheme such as com.example.app:/cb';
}

function checkInput(input: CreateOAuthClientInput, knownScopes?: readonly string[]): void {
  const errors: FieldError[] = [];
  if (typeof input.name !== 'string' || !input.name.trim() || input.name.length > 100) errors.push({ path: 'name', message: 'must be 1 to 100 characters' });
  // eslint-disable-next-line no-control-regex
  else if (/[\u0000-\u001f]/.test(input.name)) errors.push({ path: 'name', message: 'must not contain control characters' });
  if (input.type !== 'public' && input.type !== 'confidential') errors.push({ path: 'type', message: 'must be public or confidential' });
  if (input.mode !== undefined && input.mode !== 'live' && input.mode !== 'test') errors.push({ path: 'mode', message: 'must be live or test' });
  const grants = Array.isArray(input.grantTypes) ? input.grantTypes : [];
  if (!grants.length || grants.length > 3 || grants.some((g) => !GRANT_TYPES.includes(g))) {
    errors.push({ path: 'grant_types', message: `must be one or more of ${GRANT_TYPES.join(', ')}` });
  }
  if (input.type === 'public' && grants.includes('client_credentials')) {
    errors.push({ path: 'grant_types', message: 'a public client has no secret, so it cannot use client_credentials; register a confidential client' });
  }
  if (grants.includes('refresh_token') && !grants.includes('authorization_code')) {
    errors.push({ path: 'grant_types', message: 'refresh_token comes with authorization_code' });
  }
  const uris = Array.isArray(input.redirectUris) ? input.redirectUris : [];
  if (uris.length > 10) errors.push({ path: 'redirect_uris', message: 'at most 10' });
  else uris.forEach((u, i) => {
    const problem = redirectUriProblem(u);
    if (problem) errors.push({ path: `redirect_uris.${i}`, message: problem });
  });
  if (grants.includes('authorization_code') && !uris.length) {
    errors.push({ path: 'redirect_uris', message: 'authorization_code needs at least one redirect URI' });
  }
  const scopes = Array.isArray(input.scopes) ? input.scopes : [];
  if (!scopes.length || scopes.length > 200) errors.push({ path: 'scopes', message: 'must list 1 to 200 scopes' });
  const bad = scopes.filter((s) => typeof s !== 'string' || !(OIDC_SCOPES.includes(s as never)
    || (PERMISSION_SCOPE.test(s) && (!knownScopes || knownScopes.includes(s.split(':')[0]!)))));
  if (bad.length) {
    errors.push({ path: 'scopes', message: `unknown scope(s) ${bad.map(String).join(', ').slice(0, 200)}; use <scope>:read or <scope>:write${knownScopes ? ` with a scope of ${knownScopes.join(', ')}` : ''}, or ${OIDC_SCOPES.join(', ')}` });
  }
  if (errors.length) throw validationFailed(errors);
}

/**
 * Registers a client; a confidential one's `client_secret` is returned here only. `knownScopes`:
 * the permission scopes keys may hold (domain/registry.ts `permissionScopes`), to refuse unknown ones.
 */
export async function createOAuthClient(
  orm: MikroORM, input: CreateOAuthClientInput, knownScopes?: readonly string[],
): Promise<OAuthClientView & { client_secret?: string }> {
  checkInput(input, knownScopes);
  const pool = await nativePool(orm);
  const { rowCount } = await pool.query('select 1 from accounts where id = $1', [input.accountId]);
  if (!rowCount) throw new ApiError({ status: 404, code: 'not_found', title: 'Not Found', detail: `No account '${String(input.accountId).slice(0, 64)}'.`, suggestion: 'Check the account id.' });
  const secret = input.type === 'confidential' ? randomBytes(32).toString('base64url') : undefined;
  const { rows } = await pool.query<ClientRow>(
    `insert into oauth_clients (id, account_id, name, type, livemode, first_party, secret_hash, redirect_uris, grant_types, scopes)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning *`,
    [newId('oauthClient'), input.accountId, input.name.trim(), input.type, input.mode === 'live', input.firstParty ?? false,
      secret ? hashClientSecret(secret) : null, [...new Set(input.redirectUris)], [...new Set(input.grantTypes)], [...new Set(input.scopes)]],
  );
  return { ...clientView(rows[0]!), ...(secret ? { client_secret: secret } : {}) };
}

export async function listOAuthClients(orm: MikroORM, accountId: string): Promise<OAuthClientView[]> {
  const pool = await nativePool(orm);
  const { rows } = await pool.query<ClientRow>('select * from oauth_clients where account_id = $1 order by id desc', [accountId]);
  return rows.map(clientView);
}

/** Revokes a client and every token and grant it holds (they stop working at once). */
export async function revokeOAuthClient(orm: MikroORM, input: { accountId: string; clientId: string }): Promise<OAuthClientView> {
  const pool = await nativePool(orm);
  const notFound = new ApiError({
    status: 404, code: 'not_found', title: 'Not Found',
    detail: `No OAuth client with id '${String(input.clientId).slice(0, 64)}' exists in this account.`,
    suggestion: 'List the account\'s OAuth clients and use one of their ids.',
  });
  if (typeof input.clientId !== 'string' || !isId('oauthClient', input.clientId)) throw notFound;
  const { rows } = await pool.query<ClientRow>('select * from oauth_clients where id = $1 and account_id = $2', [input.clientId, input.accountId]);
  if (!rows.length) throw notFound;
  if (rows[0]!.status === 'revoked') {
    throw conflict('invalid_state_transition', `OAuth client ${input.clientId} is already revoked.`, 'Register a new client if you need access again.', { current_state: 'revoked' });
  }
  const updated = await pool.query<ClientRow>(
    `update oauth_clients set status = 'revoked', revoked_at = now() where id = $1 returning *`, [input.clientId],
  );
  await pool.query(`update oidc_models set revoked_at = now() where payload->>'clientId' = $1 and revoked_at is null`, [input.clientId]);
  return clientView(updated.rows[0]!);
}

/** The client as the provider reads it (undefined when unknown or revoked). */
export async function findClientRow(pool: Pool, clientId: string): Promise<ClientRow | undefined> {
  if (!isId('oauthClient', clientId)) return undefined;
  const { rows } = await pool.query<ClientRow>(`select * from oauth_clients where id = $1 and status = 'active'`, [clientId]);
  return rows[0];
}
