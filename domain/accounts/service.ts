import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { isCalendarDate } from '../../platform/dates.ts';
import { newId } from '../../platform/ids.ts';
import { ALL_PERMISSIONS, isPermission } from '../permissions.ts';
import { ApiKeyDailyUsage } from '../requests/entities.ts';
import { Account, ApiKey, type AccountTier, type KeyType } from './entities.ts';
import { generateKeyText, hashKey, maskKey } from './keys.ts';

/**
 * Accounts and their API keys: the operations behind the CLI, the tRPC admin router and the
 * dashboard. Accounts are not scoped by mode; keys belong to one account and one mode.
 */

export interface AccountView {
  id: string;
  object: 'account';
  name: string;
  tier: AccountTier;
  is_default: boolean;
  created_at: string;
}

export interface KeyView {
  id: string;
  object: 'api_key';
  account_id: string;
  name: string;
  type: KeyType;
  mode: 'live' | 'test';
  livemode: boolean;
  key: string;
  status: 'active' | 'revoked';
  permissions: string[];
  created_at: string;
  last_used_at: string | null;
  /** "Never" when the key was never used, as the dashboard shows it. */
  last_used: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface KeyUsage {
  requests_today: number;
  average_response_ms: number | null;
  success_rate: number | null;
}

export interface CreateKeyInput {
  name: string;
  type: KeyType;
  mode?: 'live' | 'test';
  permissions?: string[];
  /** YYYY-MM-DD; the key stops working at the start of that day (UTC). */
  expires?: string;
  accountId?: string;
}

export const DEFAULT_ACCOUNT_NAME = 'Default account';

export function accountView(a: Account): AccountView {
  return { id: a.id, object: 'account', name: a.name, tier: a.tier, is_default: a.isDefault, created_at: a.createdAt.toISOString() };
}

export function keyView(k: ApiKey): KeyView {
  return {
    id: k.id,
    object: 'api_key',
    account_id: k.accountId,
    name: k.name,
    type: k.type,
    mode: k.livemode ? 'live' : 'test',
    livemode: k.livemode,
    key: k.masked,
    status: k.status,
    permissions: k.type === 'restricted' ? k.permissions : [ALL_PERMISSIONS],
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    last_used: k.lastUsedAt?.toISOString() ?? 'Never',
    expires_at: k.expiresAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

export async function createAccount(orm: MikroORM, input: { name: string; tier?: AccountTier }): Promise<AccountView> {
  const name = input.name.trim();
  if (!name) throw validationFailed([{ path: 'name', message: 'must not be empty' }]);
  const em = orm.em.fork();
  const account = em.create(Account, { id: newId('account'), name, tier: input.tier ?? 'standard', isDefault: false });
  await em.flush();
  return accountView(account);
}

export async function listAccounts(orm: MikroORM): Promise<AccountView[]> {
  const rows = await orm.em.fork().find(Account, {}, { orderBy: { id: 'asc' } });
  return rows.map(accountView);
}

export async function setAccountTier(orm: MikroORM, accountId: string, tier: AccountTier): Promise<AccountView> {
  const em = orm.em.fork();
  const account = await em.findOne(Account, { id: accountId });
  if (!account) throw notFound('account', accountId);
  account.tier = tier;
  await em.flush();
  return accountView(account);
}

/** The account used when none is named; created on first use (safe under concurrent first uses). */
export async function defaultAccount(orm: MikroORM): Promise<AccountView> {
  const em = orm.em.fork();
  await em.getConnection().execute(
    `insert into accounts (id, name, tier, is_default, created_at) values (?, ?, 'standard', true, now())
     on conflict (is_default) where is_default do nothing`,
    [newId('account'), DEFAULT_ACCOUNT_NAME],
  );
  const account = await em.findOneOrFail(Account, { isDefault: true });
  return accountView(account);
}

async function resolveAccount(em: EntityManager, orm: MikroORM, accountId: string | undefined): Promise<string> {
  if (!accountId) return (await defaultAccount(orm)).id;
  const account = await em.findOne(Account, { id: accountId });
  if (!account) throw notFound('account', accountId);
  return account.id;
}

function checkKeyInput(input: CreateKeyInput, scopes: readonly string[]): { livemode: boolean; permissions: string[]; expiresAt: Date | null } {
  const errors: FieldError[] = [];
  if (!input.name?.trim()) errors.push({ path: 'name', message: 'must not be empty' });
  let livemode = input.type === 'live';
  if (input.type === 'restricted') {
    livemode = (input.mode ?? 'test') === 'live';
  } else if (input.mode && (input.mode === 'live') !== livemode) {
    errors.push({ path: 'mode', message: `a ${input.type} key is always in ${input.type} mode; omit mode or use type restricted` });
  }
  const permissions = [...new Set(input.permissions ?? [])];
  const bad = permissions.filter((p) => !isPermission(p, scopes));
  if (bad.length) {
    errors.push({ path: 'permissions', message: `unknown permission(s) ${bad.join(', ')}; use <scope>:read or <scope>:write with a scope of ${scopes.join(', ')}` });
  }
  if (input.type === 'restricted' && permissions.length === 0) {
    errors.push({ path: 'permissions', message: 'a restricted key needs at least one permission, e.g. crm:read' });
  }
  if (input.type !== 'restricted' && permissions.length > 0) {
    errors.push({ path: 'permissions', message: 'live and test keys hold every permission; use type restricted to limit them' });
  }
  let expiresAt: Date | null = null;
  if (input.expires) {
    if (!isCalendarDate(input.expires)) {
      errors.push({ path: 'expires', message: 'expected a calendar date YYYY-MM-DD (a day that exists, e.g. 2026-02-28)' });
    } else {
      expiresAt = new Date(`${input.expires}T00:00:00Z`);
      if (expiresAt.getTime() <= Date.now()) errors.push({ path: 'expires', message: 'must be a future date' });
    }
  }
  if (errors.length) throw validationFailed(errors);
  return { livemode, permissions, expiresAt };
}

/** Creates a key; the returned `secret` is the only time its full text exists outside the caller. */
/** `scopes`: the permission scopes keys may hold (domain/registry.ts `permissionScopes`). */
export async function createKey(orm: MikroORM, input: CreateKeyInput, scopes: readonly string[]): Promise<KeyView & { secret: string }> {
  const { livemode, permissions, expiresAt } = checkKeyInput(input, scopes);
  const em = orm.em.fork();
  const accountId = await resolveAccount(em, orm, input.accountId);
  const text = generateKeyText(input.type, livemode);
  const key = em.create(ApiKey, {
    id: newId('apiKey'),
    accountId,
    name: input.name.trim(),
    type: input.type,
    livemode,
    keyHash: hashKey(text),
    masked: maskKey(text),
    permissions,
    status: 'active',
    lastUsedAt: null,
    expiresAt,
    revokedAt: null,
  });
  await em.flush();
  return { ...keyView(key), secret: text };
}

export async function listKeys(orm: MikroORM, accountId?: string): Promise<KeyView[]> {
  const em = orm.em.fork();
  const account = await resolveAccount(em, orm, accountId);
  const keys = await em.find(ApiKey, { accountId: account }, { orderBy: { id: 'desc' } });
  return keys.map(keyView);
}

/** `accountId`, when given, confines the call to that account's keys (another account's key is not found). */
export async function revokeKey(orm: MikroORM, keyId: string, accountId?: string): Promise<KeyView> {
  const em = orm.em.fork();
  const key = await em.findOne(ApiKey, accountId ? { id: keyId, accountId } : { id: keyId });
  if (!key) throw notFound('API key', keyId);
  if (key.status === 'revoked') {
    throw new ApiError({
      status: 409, code: 'invalid_state_transition', title: 'Conflict',
      detail: `API key ${keyId} is already revoked.`, suggestion: 'Create a new key if you need access again.',
      extensions: { current_state: 'revoked' },
    });
  }
  key.status = 'revoked';
  key.revokedAt = new Date();
  await em.flush();
  return keyView(key);
}

/** What the dashboard shows per key: requests today (UTC), average response time, success rate. */
export async function keyUsage(orm: MikroORM, keyId: string): Promise<KeyUsage> {
  const today = new Date().toISOString().slice(0, 10);
  const row = await orm.em.fork().findOne(ApiKeyDailyUsage, { apiKeyId: keyId, day: today });
  if (!row || row.requests === 0) return { requests_today: 0, average_response_ms: null, success_rate: null };
  return {
    requests_today: row.requests,
    average_response_ms: Math.round((Number(row.totalDurationMs) / row.requests) * 100) / 100,
    success_rate: Math.round(((row.requests - row.errors) / row.requests) * 10_000) / 10_000,
  };
}

/** The longest a rolled key keeps working next to its replacement. */
export const MAX_ROLL_OVERLAP_MS = 7 * 86_400_000;

/**
 * Rolls a key: a new key with the same name, type, mode and permissions, and the old one expires
 * after `overlapMs` (0: at once), so callers can switch without an outage. The old key's own
 * earlier expiry, if any, is kept; the new key's secret is returned once.
 */
export async function rollKey(
  orm: MikroORM, input: { keyId: string; accountId: string; overlapMs: number }, now = new Date(),
): Promise<{ rolled: KeyView; created: KeyView & { secret: string } }> {
  if (!Number.isInteger(input.overlapMs) || input.overlapMs < 0 || input.overlapMs > MAX_ROLL_OVERLAP_MS) {
    throw validationFailed([{ path: 'overlap', message: `must be between 0 and ${MAX_ROLL_OVERLAP_MS / 3_600_000} hours` }]);
  }
  return orm.em.fork().transactional(async (em) => {
    const old = await em.findOne(ApiKey, { id: input.keyId, accountId: input.accountId });
    if (!old) throw notFound('API key', input.keyId);
    if (old.status === 'revoked' || (old.expiresAt && old.expiresAt <= now)) {
      throw new ApiError({
        status: 409, code: 'invalid_state_transition', title: 'Conflict',
        detail: `API key ${input.keyId} no longer works, so there is nothing to roll.`, suggestion: 'Create a new key instead.',
        extensions: { current_state: old.status === 'revoked' ? 'revoked' : 'expired' },
      });
    }
    const until = new Date(now.getTime() + input.overlapMs);
    if (!old.expiresAt || old.expiresAt > until) old.expiresAt = until;
    const text = generateKeyText(old.type, old.livemode);
    const created = em.create(ApiKey, {
      id: newId('apiKey'), accountId: old.accountId, name: old.name, type: old.type, livemode: old.livemode,
      keyHash: hashKey(text), masked: maskKey(text), permissions: [...old.permissions], status: 'active',
      lastUsedAt: null, expiresAt: null, revokedAt: null,
    });
    await em.flush();
    return { rolled: keyView(old), created: { ...keyView(created), secret: text } };
  });
}
