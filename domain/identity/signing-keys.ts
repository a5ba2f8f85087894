import type { Pool } from 'pg';
import { generateKeyPairSync, randomBytes } from 'node:crypto';

/**
 * The OpenID Provider's keys, kept in `oauth_signing_keys` so every API process signs with the same
 * key and a restart keeps them:
 *
 * - signing keys (RS256 JWKs): the current one signs ID tokens; a rotated-in key is published in the
 *   JWKS from its creation but signs only from `activates_at` (relying parties can fetch it first);
 *   the key it replaces stays published until `delete_after` (its tokens' lifetime), then goes.
 * - cookie secrets: the newest signs the provider's cookies; older ones still verify until
 *   `delete_after`, so a rotation signs nobody out of an interaction in progress.
 *
 * The private keys are stored as they are (PostgreSQL access is already full trust here: the same
 * database holds the argon2 hashes and every token's state); they are never logged or returned.
 */
export const SIGNING_ALG = 'RS256';

/** How long a replaced key stays published: longer than any JWT it signed lives (ID tokens: 1 hour). */
export const DEFAULT_RETAIN_SECONDS = 24 * 3600;

export interface PrivateJwk { kid: string; kty: string; alg: string; use: 'sig'; [member: string]: unknown }

export interface ProviderKeys {
  /** The signing key first (the provider signs with the first key that fits), then pending and retired ones. */
  jwks: PrivateJwk[];
  /** Newest first: the first signs cookies, the others verify. */
  cookieKeys: string[];
  /** Changes whenever the key set or the signing key changes: the provider is rebuilt then. */
  fingerprint: string;
}

export interface SigningKeyView {
  kid: string;
  status: 'signing' | 'pending' | 'retired';
  created_at: string;
  activates_at: string;
  delete_after: string | null;
}

interface KeyRow {
  id: string; kind: 'signing' | 'cookie'; private_jwk: PrivateJwk | null; secret: string | null;
  created_at: Date | string; activates_at: Date | string; delete_after: Date | string | null; current: boolean; pending: boolean;
}

function newSigningKey(): PrivateJwk {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `k_${randomBytes(12).toString('base64url')}`;
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: SIGNING_ALG, use: 'sig' } as PrivateJwk;
}

/** Serialises key creation across API processes (two starting at once create one key, not two). */
const KEY_LOCK = "hashtext('bp_oauth_signing_keys')";

/** Creates the first signing key and cookie secret when there are none (first start). */
export async function ensureProviderKeys(pool: Pool): Promise<void> {
  const { rows } = await pool.query<{ kind: string }>(
    'select distinct kind from oauth_signing_keys where activates_at <= now() and (delete_after is null or delete_after > now())',
  );
  if (rows.length === 2) return;
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(`select pg_advisory_xact_lock(${KEY_LOCK})`);
    const kinds = new Set((await client.query<{ kind: string }>(
      'select distinct kind from oauth_signing_keys where activates_at <= now() and (delete_after is null or delete_after > now())',
    )).rows.map((r) => r.kind));
    if (!kinds.has('signing')) {
      const jwk = newSigningKey();
      await client.query(`insert into oauth_signing_keys (id, kind, private_jwk) values ($1, 'signing', $2)`, [jwk.kid, jwk]);
    }
    if (!kinds.has('cookie')) {
      await client.query(`insert into oauth_signing_keys (id, kind, secret) values ($1, 'cookie', $2)`,
        [`c_${randomBytes(12).toString('base64url')}`, randomBytes(32).toString('base64url')]);
    }
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

async function keyRows(pool: Pool): Promise<KeyRow[]> {
  const { rows } = await pool.query<KeyRow>(
    `with live as (
       select * from oauth_signing_keys where delete_after is null or delete_after > now()
     ), current as (
       select distinct on (kind) id from live where activates_at <= now() order by kind, activates_at desc, created_at desc
     )
     select live.*, live.id in (select id from current) as current, live.activates_at > now() as pending
       from live order by (live.id in (select id from current)) desc, live.activates_at desc, live.created_at desc`,
  );
  return rows;
}

/** The keys the provider is built with (call ensureProviderKeys first). */
export async function loadProviderKeys(pool: Pool): Promise<ProviderKeys> {
  const rows = await keyRows(pool);
  const signing = rows.filter((r) => r.kind === 'signing' && r.private_jwk);
  // Cookie secrets that are not active yet do not sign, but are harmless to verify with.
  const cookies = rows.filter((r) => r.kind === 'cookie' && r.secret && !r.pending);
  return {
    jwks: signing.map((r) => ({ ...r.private_jwk!, kid: r.id })),
    cookieKeys: cookies.map((r) => r.secret!),
    fingerprint: rows.map((r) => `${r.id}:${r.current ? 'c' : r.pending ? 'p' : 'r'}`).join(','),
  };
}

/**
 * Rotates: a new signing key (published now, signing from `leadSeconds` on) and a new cookie secret.
 * The keys they replace are retired when the new ones activate and stay published (verifying) for
 * `retainSeconds` more. Keys past their `delete_after` are deleted.
 */
export async function rotateProviderKeys(
  pool: Pool, opts: { leadSeconds?: number; retainSeconds?: number } = {},
): Promise<{ kid: string; activates_at: string }> {
  const lead = Math.max(0, Math.floor(opts.leadSeconds ?? 0));
  const retain = Math.max(0, Math.floor(opts.retainSeconds ?? DEFAULT_RETAIN_SECONDS));
  const jwk = newSigningKey();
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(`select pg_advisory_xact_lock(${KEY_LOCK})`);
    await client.query('delete from oauth_signing_keys where delete_after <= now()');
    const { rows } = await client.query<{ activates_at: Date | string }>(
      `insert into oauth_signing_keys (id, kind, private_jwk, activates_at)
       values ($1, 'signing', $2, now() + make_interval(secs => $3)) returning activates_at`,
      [jwk.kid, jwk, lead],
    );
    await client.query(
      `insert into oauth_signing_keys (id, kind, secret, activates_at) values ($1, 'cookie', $2, now() + make_interval(secs => $3))`,
      [`c_${randomBytes(12).toString('base64url')}`, randomBytes(32).toString('base64url'), lead],
    );
    // A key still waiting to activate is superseded (it never signed): gone at once. Every other
    // older key of either kind retires when its successor activates.
    await client.query(
      `delete from oauth_signing_keys where id <> $1 and activates_at > now()
          and created_at < (select created_at from oauth_signing_keys where id = $1)`,
      [jwk.kid],
    );
    await client.query(
      `update oauth_signing_keys set retired_at = now() + make_interval(secs => $1),
              delete_after = now() + make_interval(secs => $1 + $2)
        where retired_at is null and id <> $3
          and created_at < (select created_at from oauth_signing_keys where id = $3)`,
      [lead, retain, jwk.kid],
    );
    await client.query('commit');
    return { kid: jwk.kid, activates_at: new Date(rows[0]!.activates_at).toISOString() };
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The signing keys as the CLI lists them (no key material). */
export async function listSigningKeys(pool: Pool): Promise<SigningKeyView[]> {
  const rows = await keyRows(pool);
  return rows.filter((r) => r.kind === 'signing').map((r) => ({
    kid: r.id, status: r.current ? 'signing' : r.pending ? 'pending' : 'retired',
    created_at: new Date(r.created_at).toISOString(), activates_at: new Date(r.activates_at).toISOString(),
    delete_after: r.delete_after ? new Date(r.delete_after).toISOString() : null,
  }));
}
