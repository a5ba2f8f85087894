/**
 * The key-management CLI (scripts depend on these exact forms):
 *   npm run --silent cli -- accounts create --name NAME [--tier standard|premium] [--json]
 *   npm run --silent cli -- keys create --name NAME --type live|test|restricted [--mode live|test]
 *        [--permissions area:read,area:write] [--expires YYYY-MM-DD] [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- keys list [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- keys revoke KEY_ID [--json]
 *   npm run --silent cli -- users create --email EMAIL --role owner|admin|developer|viewer [--account ACCOUNT_ID]
 *        [--password PASSWORD] [--json]   (without --password: BP_USER_PASSWORD, else a generated one printed once)
 *   npm run --silent cli -- users list [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- clients create --name NAME --type public|confidential --grants authorization_code,refresh_token,client_credentials
 *        --scopes openid,payments:read [--redirect-uris https://app.example.com/cb] [--mode live|test] [--first-party] [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- clients list [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- clients revoke CLIENT_ID [--account ACCOUNT_ID] [--json]
 *   npm run --silent cli -- oauth-keys rotate [--lead SECONDS] [--json]   (publish a new signing key; it signs after SECONDS, default 0)
 *   npm run --silent cli -- oauth-keys list [--json]
 * It works on the same database as `npm start` (platform/local-database.ts resolveDatabase): DATABASE_URL,
 * or the embedded one under DATA_DIR (default .data/); it names it on stderr, password masked.
 */
import { parseArgs } from 'node:util';
import { createOrm, migrate, type MikroORM } from '../db/orm.ts';
import { permissionScopes } from '../domain/registry.ts';
import { ACCOUNT_TIERS, KEY_TYPES, type AccountTier, type KeyType } from '../domain/accounts/entities.ts';
import { createAccount, createKey, defaultAccount, keyUsage, listKeys, revokeKey } from '../domain/accounts/service.ts';
import { DASHBOARD_ROLES, addMember, type DashboardRole } from '../domain/identity/public.ts';
import { listUsers } from '../domain/identity/users.ts';
import { GRANT_TYPES, createOAuthClient, listOAuthClients, revokeOAuthClient, type GrantType } from '../domain/identity/public.ts';
import { listSigningKeys, rotateProviderKeys } from '../domain/identity/signing-keys.ts';
import { nativePool } from '../db/pool.ts';
import { ApiError } from '../platform/errors.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { maskDatabaseUrl, resolveDatabase } from '../platform/local-database.ts';

const USAGE = `Usage:
  cli accounts create --name NAME [--tier standard|premium] [--json]
  cli keys create --name NAME --type live|test|restricted [--mode live|test]
                  [--permissions area:read,area:write] [--expires YYYY-MM-DD] [--account ACCOUNT_ID] [--json]
  cli keys list [--account ACCOUNT_ID] [--json]
  cli keys revoke KEY_ID [--json]
  cli users create --email EMAIL --role owner|admin|developer|viewer [--account ACCOUNT_ID] [--password PASSWORD] [--json]
                   (without --password: the BP_USER_PASSWORD environment variable, else a generated password shown once)
  cli users list [--account ACCOUNT_ID] [--json]
  cli clients create --name NAME --type public|confidential --grants authorization_code,refresh_token,client_credentials
                     --scopes openid,email,payments:read [--redirect-uris URI,URI] [--mode live|test] [--first-party]
                     [--account ACCOUNT_ID] [--json]   (a confidential client's secret is shown once)
  cli clients list [--account ACCOUNT_ID] [--json]
  cli clients revoke CLIENT_ID [--account ACCOUNT_ID] [--json]
  cli oauth-keys rotate [--lead SECONDS] [--json]   (the new signing key is published now and signs after SECONDS; default 0)
  cli oauth-keys list [--json]`;

class UsageError extends Error {}

const { values: opts, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        name: { type: 'string' }, tier: { type: 'string' }, type: { type: 'string' }, mode: { type: 'string' },
        permissions: { type: 'string' }, expires: { type: 'string' }, account: { type: 'string' },
        email: { type: 'string' }, role: { type: 'string' }, password: { type: 'string' },
        grants: { type: 'string' }, scopes: { type: 'string' }, 'redirect-uris': { type: 'string' },
        'first-party': { type: 'boolean', default: false }, lead: { type: 'string' },
        json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
})();

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) throw new UsageError(`--${flag} must be one of: ${allowed.join(', ')}`);
  return value as T;
}

function required(flag: string, value: string | undefined): string {
  if (!value) throw new UsageError(`--${flag} is required`);
  return value;
}

const print = (json: unknown, human: string) => console.log(opts.json ? JSON.stringify(json) : human);

async function run(orm: MikroORM, [area, action, arg]: string[]): Promise<void> {
  const command = `${area} ${action}`;
  switch (command) {
    case 'accounts create': {
      const account = await createAccount(orm, { name: required('name', opts.name), tier: oneOf<AccountTier>('tier', opts.tier, ACCOUNT_TIERS) });
      return print(account, `Created account ${account.id} (${account.name}, ${account.tier} tier)`);
    }
    case 'keys create': {
      const { secret, ...key } = await createKey(orm, {
        name: required('name', opts.name),
        type: oneOf<KeyType>('type', required('type', opts.type), KEY_TYPES)!,
        mode: oneOf('mode', opts.mode, ['live', 'test'] as const),
        permissions: opts.permissions?.split(',').map((p) => p.trim()).filter(Boolean),
        expires: opts.expires,
        accountId: opts.account,
      }, permissionScopes);
      return print({ ...key, key: secret, masked: key.key }, [
        `Created ${key.type} key ${key.id} (${key.mode} mode) on account ${key.account_id}`,
        '',
        `  ${secret}`,
        '',
        'This is the only time the full key is shown: store it in a secret manager or your environment.',
      ].join('\n'));
    }
    case 'keys list': {
      const keys = await listKeys(orm, opts.account);
      const withUsage = await Promise.all(keys.map(async (k) => ({ ...k, usage: await keyUsage(orm, k.id) })));
      const rows = withUsage.map((k) => [k.id, k.name, k.type, k.key, k.status, k.last_used, k.expires_at?.slice(0, 10) ?? '-', String(k.usage.requests_today)]);
      const header = ['ID', 'NAME', 'TYPE', 'KEY', 'STATUS', 'LAST USED', 'EXPIRES', 'TODAY'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      const table = [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ')).join('\n');
      return print({ object: 'list', data: withUsage }, rows.length ? table : 'No keys yet: create one with `keys create`.');
    }
    case 'keys revoke': {
      const key = await revokeKey(orm, required('KEY_ID', arg));
      return print(key, `Revoked ${key.id} (${key.name})`);
    }
    case 'users create': {
      // --password, else BP_USER_PASSWORD, else generated (printed once): a password on the command
      // line stays in the shell's history, so scripts should prefer the environment variable.
      const password = opts.password ?? process.env.BP_USER_PASSWORD;
      const accountId = opts.account ?? (await defaultAccount(orm)).id;
      const { member, temporary_password } = await addMember(orm, {
        accountId, email: required('email', opts.email), role: oneOf<DashboardRole>('role', required('role', opts.role), DASHBOARD_ROLES)!,
        ...(password ? { password } : {}),
      });
      const lines = [`Created ${member.role} ${member.email} (${member.id}) on account ${member.account_id}`];
      if (temporary_password) lines.push('', `  password: ${temporary_password}`, '', 'This is the only time the password is shown. Sign in at /dashboard.');
      else if (!password) lines.push('The user already existed and keeps their password.');
      return print({ ...member, ...(temporary_password ? { password: temporary_password } : {}) }, lines.join('\n'));
    }
    case 'users list': {
      const users = await listUsers(orm, opts.account);
      const rows = users.map((u) => [u.id, u.email, u.memberships.map((m) => `${m.account_id}:${m.role}`).join(' ')]);
      const table = [['ID', 'EMAIL', 'MEMBERSHIPS'], ...rows].map((r) => r.join('  ')).join('\n');
      return print({ object: 'list', data: users }, rows.length ? table : 'No users yet: create the first owner with `users create --role owner`.');
    }
    case 'clients create': {
      const list = (value: string | undefined) => (value ?? '').split(',').map((v) => v.trim()).filter(Boolean);
      const grants = list(required('grants', opts.grants));
      for (const g of grants) oneOf<GrantType>('grants', g, GRANT_TYPES);
      const { client_secret: secret, ...client } = await createOAuthClient(orm, {
        accountId: opts.account ?? (await defaultAccount(orm)).id,
        name: required('name', opts.name),
        type: oneOf('type', required('type', opts.type), ['public', 'confidential'] as const)!,
        mode: oneOf('mode', opts.mode, ['live', 'test'] as const),
        grantTypes: grants as GrantType[],
        scopes: list(required('scopes', opts.scopes)),
        redirectUris: list(opts['redirect-uris']),
        firstParty: opts['first-party'],
      }, permissionScopes);
      const lines = [`Registered ${client.type} OAuth client ${client.client_id} (${client.name}, ${client.mode} mode) on account ${client.account_id}`];
      if (secret) lines.push('', `  client_secret: ${secret}`, '', 'This is the only time the secret is shown: store it in a secret manager.');
      return print({ ...client, ...(secret ? { client_secret: secret } : {}) }, lines.join('\n'));
    }
    case 'clients list': {
      const clients = await listOAuthClients(orm, opts.account ?? (await defaultAccount(orm)).id);
      const rows = clients.map((c) => [c.client_id, c.name, c.type, c.mode, c.status, c.grant_types.join(','), c.scopes.join(' ')]);
      const table = [['CLIENT ID', 'NAME', 'TYPE', 'MODE', 'STATUS', 'GRANTS', 'SCOPES'], ...rows].map((r) => r.join('  ')).join('\n');
      return print({ object: 'list', data: clients }, rows.length ? table : 'No OAuth clients yet: register one with `clients create`.');
    }
    case 'clients revoke': {
      const client = await revokeOAuthClient(orm, { accountId: opts.account ?? (await defaultAccount(orm)).id, clientId: required('CLIENT_ID', arg) });
      return print(client, `Revoked ${client.client_id} (${client.name}); its tokens stopped working.`);
    }
    case 'oauth-keys rotate': {
      const lead = opts.lead === undefined ? 0 : Number(opts.lead);
      if (!Number.isInteger(lead) || lead < 0 || lead > 30 * 86_400) throw new UsageError('--lead must be a whole number of seconds from 0 to 2592000');
      const key = await rotateProviderKeys(await nativePool(orm), { leadSeconds: lead });
      return print(key, `Published signing key ${key.kid}; it signs from ${key.activates_at}. The previous key stays in the JWKS for a day after that.`);
    }
    case 'oauth-keys list': {
      const keys = await listSigningKeys(await nativePool(orm));
      const rows = keys.map((k) => [k.kid, k.status, k.activates_at, k.delete_after ?? '-']);
      const table = [['KID', 'STATUS', 'SIGNS FROM', 'UNPUBLISHED AFTER'], ...rows].map((r) => r.join('  ')).join('\n');
      return print({ object: 'list', data: keys }, rows.length ? table : 'No signing keys yet: the API creates the first one when /oauth is first used.');
    }
    default:
      throw new UsageError(area ? `Unknown command: ${positionals.join(' ')}` : 'No command given');
  }
}

if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}

// The same resolution as `npm start` (resolveDatabase); said on stderr so `--json` output stays clean.
const local = await resolveDatabase(loadConfigOrExit(), { advertise: false });
console.error(`database: ${maskDatabaseUrl(local.url)} (${local.source})`);
const orm = await createOrm({ url: local.url, poolMax: 2, statementTimeoutMs: 0 });
let exitCode = 0;
try {
  await migrate(orm);
  await run(orm, positionals);
} catch (err) {
  exitCode = 1;
  if (err instanceof UsageError) {
    console.error(`${err.message}\n\n${USAGE}`);
    exitCode = 2;
  } else if (err instanceof ApiError) {
    if (opts.json) console.error(JSON.stringify({ code: err.code, detail: err.detail, errors: err.errors }));
    else {
      console.error(`error: ${err.detail}`);
      for (const e of err.errors ?? []) console.error(`  --${e.path}: ${e.message}`);
      console.error(err.suggestion);
    }
  } else {
    console.error(`error: ${(err as Error).message}`);
  }
} finally {
  await orm.close();
  await local.stop();
}
process.exit(exitCode);
