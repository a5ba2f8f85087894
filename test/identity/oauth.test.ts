import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { describe, expect, it } from 'vitest';
import { nativePool } from '../../db/pool.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { createOAuthClient, createUser, revokeOAuthClient } from '../../domain/identity/public.ts';
import { purgeExpiredOidcModels } from '../../domain/identity/oidc-adapter.ts';
import { rotateProviderKeys } from '../../domain/identity/signing-keys.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { Browser, formAction, hiddenField } from './oauth-browser.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
usePlatform({ ownAccount: true }, (t) => ({ platform, http, key, accountId } = t));

const exec = promisify(execFile);
const REDIRECT = 'http://127.0.0.1:9/cb';
const PASSWORD = 'a long enough password 42';
const insecure = { execute: [oidc.allowInsecureRequests] };

const issuer = () => new URL(`${platform.url}/oauth`);

async function newUser(account: string, role: 'owner' | 'viewer' = 'owner'): Promise<string> {
  const email = `u${Math.random().toString(36).slice(2, 10)}@example.com`;
  await createUser(platform.orm, { email, password: PASSWORD, accountId: account, role });
  return email;
}

async function registerClient(input: Partial<Parameters<typeof createOAuthClient>[1]> & { accountId: string }) {
  return createOAuthClient(platform.orm, {
    name: 'Partner app', type: 'public', redirectUris: [REDIRECT], grantTypes: ['authorization_code', 'refresh_token'],
    scopes: ['openid', 'email', 'payments:read', 'crm:read'], ...input,
  }, permissionScopes);
}

/** The relying party's configuration, from the platform's discovery document. */
async function rp(client: { client_id: string; client_secret?: string }): Promise<oidc.Configuration> {
  const auth = client.client_secret ? oidc.ClientSecretBasic(client.client_secret) : oidc.None();
  return oidc.discovery(issuer(), client.client_id, undefined, auth, insecure);
}

/**
 * Authorization code + PKCE through the real pages: the login form, then (third-party clients) the
 * consent form; returns the tokens and the pages seen.
 */
async function signIn(config: oidc.Configuration, email: string, scope: string, opts: { accountId?: string } = {}) {
  const browser = new Browser();
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, scope, state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const login = await browser.follow(url, REDIRECT);
  expect(login.res.status).toBe(200);
  expect(login.text).toContain('<label for="password">Password</label>');
  let page = await browser.follow(new URL(formAction(login.text, '/login'), platform.url), REDIRECT, {
    form: { csrf_token: hiddenField(login.text, 'csrf_token'), email, password: PASSWORD, account_id: opts.accountId ?? '' },
  });
  const pages = [login.text];
  if (!page.url.href.startsWith(REDIRECT)) {
    pages.push(page.text);
    expect(page.text).toContain('Allow access?');
    page = await browser.follow(new URL(formAction(page.text, '/confirm'), platform.url), REDIRECT, {
      form: { csrf_token: hiddenField(page.text, 'csrf_token') },
    });
  }
  expect(page.url.href.startsWith(REDIRECT)).toBe(true);
  const tokens = await oidc.authorizationCodeGrant(config, page.url, { pkceCodeVerifier: verifier, expectedState: state });
  return { tokens, pages };
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe('OpenID Provider at /oauth', () => {
  it('publishes discovery at /oauth/.well-known and at the origin, with the supported grants, scopes and a JWKS', async () => {
    const doc = (await (await fetch(`${platform.url}/oauth/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc).toMatchObject({
      issuer: `${platform.url}/oauth`, token_endpoint: `${platform.url}/oauth/token`, jwks_uri: `${platform.url}/oauth/jwks`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(doc.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']));
    expect(doc.scopes_supported).toEqual(expect.arrayContaining(['openid', 'email', 'profile', 'payments:write', 'billing:read']));
    expect(doc.introspection_endpoint).toBe(`${platform.url}/oauth/token/introspection`);
    expect(doc.revocation_endpoint).toBe(`${platform.url}/oauth/token/revocation`);
    const root = (await (await fetch(`${platform.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(root.issuer).toBe(doc.issuer);
    const jwks = (await (await fetch(`${platform.url}/oauth/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const k of jwks.keys) expect(k).not.toHaveProperty('d');
  });

  it('authorization code + PKCE for a public third-party client: login form, consent, tokens that act in the user\'s account with the granted scopes', async () => {
    const email = await newUser(accountId);
    const client = await registerClient({ accountId });
    const config = await rp(client);
    const { tokens, pages } = await signIn(config, email, 'openid email payments:read crm:read');
    expect(pages).toHaveLength(2);
    expect(pages[1]).toContain('<code>payments:read</code>');
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.access_token).toMatch(/^[\w-]{43}$/);
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.claims()).toMatchObject({ email, sub: expect.stringMatching(new RegExp(`\\.${accountId}$`)) });
    expect(tokens.scope?.split(' ')).toEqual(expect.arrayContaining(['payments:read', 'crm:read']));

    // The token reads the account's data: a customer made with the account's key.
    const customer = await http('/v3/customers', { key, body: { email: 'c@example.com', name: 'Customer' } });
    expect(customer.status).toBe(201);
    const read = await http(`/v3/customers/${customer.body.id}`, bearer(tokens.access_token));
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(customer.body.id);
    expect(read.headers.get('x-ratelimit-limit')).toBeTruthy();

    // It was not granted crm:write, nor payments:write: refused, naming the scope.
    const write = await http('/v3/payments/process', { ...bearer(tokens.access_token), body: { amount: 1000, currency: 'usd' } });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ code: 'permission_denied', required_permission: 'payments:write', required_scope: 'payments:write' });
    expect(write.body.detail).toContain('payments:write');
    expect(write.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('a token cannot reach another account\'s data', async () => {
    const other = await platform.newAccount();
    const theirKey = await platform.newKey({ accountId: other });
    const theirs = await http('/v3/customers', { key: theirKey, body: { email: 'other@example.com', name: 'Theirs' } });
    expect(theirs.status).toBe(201);
    const email = await newUser(accountId);
    const config = await rp(await registerClient({ accountId, firstParty: true }));
    const { tokens } = await signIn(config, email, 'openid crm:read');
    const res = await http(`/v3/customers/${theirs.body.id}`, bearer(tokens.access_token));
    expect(res.status).toBe(404);
    const list = await http('/v3/customers', bearer(tokens.access_token));
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toContain(theirs.body.id);
  });

  it('a first-party client skips consent; refresh tokens rotate, and a reused one is refused and revokes the grant', async () => {
    const email = await newUser(accountId);
    const client = await registerClient({ accountId, type: 'confidential', firstParty: true });
    const config = await rp(client);
    const { tokens, pages } = await signIn(config, email, 'openid crm:read');
    expect(pages, pages[1]).toHaveLength(1); // the login form only

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await http('/v3/customers', bearer(refreshed.access_token))).status).toBe(200);

    const reuse = await oidc.refreshTokenGrant(config, tokens.refresh_token!).catch((e: unknown) => e);
    expect(reuse).toMatchObject({ error: 'invalid_grant' });
    // Reuse of a rotated refresh token is treated as theft: the whole grant is revoked.
    const after = await http('/v3/customers', bearer(refreshed.access_token));
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('access_token_revoked');
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('client credentials: a machine token in the client\'s account and mode, limited to its scopes', async () => {
    const client = await registerClient({ accountId, type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read', 'payments:read'] });
    const config = await rp(client);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'crm:read payments:read' });
    expect(tokens.access_token).toMatch(/^[\w-]{43}$/);
    expect(tokens.refresh_token).toBeUndefined();
    const list = await http('/v3/customers', bearer(tokens.access_token));
    expect(list.status).toBe(200);
    // Rate limits count per client, across its tokens.
    const second = await oidc.clientCredentialsGrant(config, { scope: 'crm:read' });
    expect(second.access_token).not.toBe(tokens.access_token);
    expect((await http('/v3/customers', bearer(second.access_token))).status).toBe(200);
    const counted = await platform.sql<{ n: number }>(
      `select sum(count)::int as n from rate_limit_windows where api_key_id = $1 and period = 'minute'`, [client.client_id]);
    expect(counted[0]!.n).toBe(2);
    const write = await http('/v3/payments/process', { ...bearer(tokens.access_token), body: { amount: 1000, currency: 'usd' } });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ code: 'permission_denied', required_permission: 'payments:write' });
    // A scope the client was not registered with is refused at the token endpoint.
    await expect(oidc.clientCredentialsGrant(config, { scope: 'payments:write' })).rejects.toMatchObject({ error: 'invalid_scope' });
    // A wrong secret is refused.
    const wrong = await oidc.discovery(issuer(), client.client_id, undefined, oidc.ClientSecretBasic('not-the-secret'), insecure);
    const refused = await oidc.clientCredentialsGrant(wrong, { scope: 'crm:read' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 401, cause: [{ parameters: { error: 'invalid_client' } }] });
  });

  it('introspection answers the token\'s account, mode and scope, to its own account\'s clients only; revocation ends it', async () => {
    const client = await registerClient({ accountId, type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read'], mode: 'live' });
    const config = await rp(client);
    const { access_token: token } = await oidc.clientCredentialsGrant(config, { scope: 'crm:read' });
    const info = await oidc.tokenIntrospection(config, token);
    expect(info).toMatchObject({ active: true, client_id: client.client_id, scope: 'crm:read', account_id: accountId, mode: 'live' });

    const stranger = await registerClient({ accountId: await platform.newAccount(), type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read'] });
    expect(await oidc.tokenIntrospection(await rp(stranger), token)).toMatchObject({ active: false });

    await oidc.tokenRevocation(config, token);
    expect(await oidc.tokenIntrospection(config, token)).toMatchObject({ active: false });
    const res = await http('/v3/customers', bearer(token));
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'access_token_revoked' });
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
  });

  it('expired and unknown tokens get 401 problems', async () => {
    const client = await registerClient({ accountId, type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read'] });
    const { access_token: token } = await oidc.clientCredentialsGrant(await rp(client), { scope: 'crm:read' });
    await platform.sql(`update oidc_models set expires_at = now() - interval '1 second' where model = 'ClientCredentials' and payload->>'clientId' = $1`, [client.client_id]);
    const expired = await http('/v3/customers', bearer(token));
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('access_token_expired');
    const unknown = await http('/v3/customers', bearer('A'.repeat(43)));
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('access_token_invalid');
  });

  it('the login form refuses a wrong password (accessibly) and a post without its CSRF token', async () => {
    const email = await newUser(accountId);
    const config = await rp(await registerClient({ accountId }));
    const browser = new Browser();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    });
    const login = await browser.follow(url, REDIRECT);
    const action = new URL(formAction(login.text, '/login'), platform.url);
    const wrong = await browser.request(action, { form: { csrf_token: hiddenField(login.text, 'csrf_token'), email, password: 'not the password at all' } });
    expect(wrong.res.status).toBe(401);
    expect(wrong.text).toContain('role="alert"');
    expect(wrong.text).toContain(`value="${email}"`);
    // Counted by the dashboard's sign-in throttle (the same buckets as POST /dashboard/session).
    const counted = await platform.sql<{ failures: number }>('select failures from login_throttle where bucket = $1', [`email:${email}`]);
    expect(counted[0]?.failures).toBe(1);
    const forged = await browser.request(action, { form: { csrf_token: 'x'.repeat(43), email, password: PASSWORD } });
    expect(forged.res.status).toBe(403);
    const nul = await browser.request(action, { form: { csrf_token: hiddenField(login.text, 'csrf_token'), email: `${email}\u0000`, password: PASSWORD } });
    expect(nul.res.status).toBe(400);
    expect(nul.text).toContain('control character');
    const huge = await browser.request(action, { form: { csrf_token: hiddenField(login.text, 'csrf_token'), email, password: 'x'.repeat(100_000) } });
    expect(huge.res.status).toBe(413);
    // Without the interaction's cookie (another browser), the form is refused as expired.
    const stranger = await new Browser().request(action, { form: { csrf_token: hiddenField(login.text, 'csrf_token'), email, password: PASSWORD } });
    expect(stranger.res.status).toBe(400);
  });

  it('rotates signing keys: the new key is published before it signs, and tokens signed with the previous key still verify', async () => {
    const email = await newUser(accountId);
    const config = await rp(await registerClient({ accountId, firstParty: true }));
    const jwks = async () => (await (await fetch(`${platform.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] };
    const before = await signIn(config, email, 'openid');
    const oldKid = decodeProtectedHeader(before.tokens.id_token!).kid;

    const pool = await nativePool(platform.orm);
    const pending = await rotateProviderKeys(pool, { leadSeconds: 3600 });
    const published = await jwks();
    expect(published.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, pending.kid]));
    const meanwhile = await signIn(config, email, 'openid');
    expect(decodeProtectedHeader(meanwhile.tokens.id_token!).kid).toBe(oldKid);

    const now = await rotateProviderKeys(pool, { leadSeconds: 0 });
    const after = await signIn(config, email, 'openid');
    expect(decodeProtectedHeader(after.tokens.id_token!).kid).toBe(now.kid);
    const keys = await jwks();
    expect(keys.keys.map((k) => k.kid)).toContain(oldKid);
    const verified = await jwtVerify(before.tokens.id_token!, createLocalJWKSet(keys as never), { issuer: issuer().href });
    expect(verified.protectedHeader.kid).toBe(oldKid);
  });

  it('a viewer\'s token only reads, whatever scopes it was granted', async () => {
    const email = await newUser(accountId, 'viewer');
    const config = await rp(await registerClient({ accountId, firstParty: true, scopes: ['openid', 'crm:write'] }));
    const { tokens } = await signIn(config, email, 'openid crm:write');
    expect((await http('/v3/customers', bearer(tokens.access_token))).status).toBe(200);
    const write = await http('/v3/customers', { ...bearer(tokens.access_token), body: { email: 'v@example.com', name: 'By a viewer' } });
    expect(write.status).toBe(403);
    expect(write.body).toMatchObject({ code: 'permission_denied', required_permission: 'crm:write' });
  });

  it('the CLI registers a client (secret shown once) and rotates the signing key', async () => {
    const env = { ...process.env, DATABASE_URL: platform.dbUrl, LOG_LEVEL: 'warn' };
    const created = JSON.parse((await exec(process.execPath, ['bin/cli.ts', 'clients', 'create', '--name', 'Nightly export', '--type', 'confidential',
      '--grants', 'client_credentials', '--scopes', 'crm:read', '--account', accountId, '--json'], { env })).stdout);
    expect(created).toMatchObject({ object: 'oauth_client', type: 'confidential', account_id: accountId, client_secret: expect.stringMatching(/^[\w-]{43}$/) });
    const tokens = await oidc.clientCredentialsGrant(await rp(created), { scope: 'crm:read' });
    expect((await http('/v3/customers', bearer(tokens.access_token))).status).toBe(200);
    expect(JSON.stringify(await platform.sql('select * from oauth_clients where id = $1', [created.client_id]))).not.toContain(created.client_secret);

    const rotated = JSON.parse((await exec(process.execPath, ['bin/cli.ts', 'oauth-keys', 'rotate', '--json'], { env })).stdout);
    const jwks = (await (await fetch(`${platform.url}/oauth/jwks`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(rotated.kid);
    const keys = JSON.parse((await exec(process.execPath, ['bin/cli.ts', 'oauth-keys', 'list', '--json'], { env })).stdout);
    expect(keys.data.find((k: { kid: string }) => k.kid === rotated.kid)).toMatchObject({ status: 'signing' });
    expect(keys.data.filter((k: { status: string }) => k.status === 'retired').length).toBeGreaterThan(0);
    expect(JSON.stringify(keys)).not.toMatch(/"d":|private/);
  }, 120_000); // three CLI processes, each loading the code and checking migrations: slow on a loaded machine

  it('a live-mode client\'s tokens act in live mode only; revoking the client stops its tokens', async () => {
    const live = await registerClient({ accountId, type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read', 'crm:write'], mode: 'live' });
    const config = await rp(live);
    const { access_token: token } = await oidc.clientCredentialsGrant(config, { scope: 'crm:read crm:write' });
    const created = await http('/v3/customers', { ...bearer(token), body: { email: 'live@example.com', name: 'Live customer' } });
    expect(created.status).toBe(201);
    expect(created.body.livemode).toBe(true);
    // The account's test-mode data is not the live token's.
    const testCustomer = await http('/v3/customers', { key, body: { email: 'test@example.com', name: 'Test customer' } });
    expect(testCustomer.body.livemode).toBe(false);
    expect((await http(`/v3/customers/${testCustomer.body.id}`, bearer(token))).status).toBe(404);
    expect((await http(`/v3/customers/${created.body.id}`, { key })).status).toBe(404);

    await revokeOAuthClient(platform.orm, { accountId, clientId: live.client_id });
    const after = await http('/v3/customers', bearer(token));
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('access_token_revoked');
    const refused = await oidc.clientCredentialsGrant(config, { scope: 'crm:read' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 401, cause: [{ parameters: { error: 'invalid_client' } }] });
  });

  it('purges provider rows a day after they expire, keeping recently expired ones (they still answer "expired")', async () => {
    await platform.sql(`insert into oidc_models (model, id, payload, expires_at) values
      ('AccessToken', 'purge-old', '{}', now() - interval '2 days'), ('AccessToken', 'purge-recent', '{}', now() - interval '1 hour')`);
    expect(await purgeExpiredOidcModels(await nativePool(platform.orm))).toBeGreaterThanOrEqual(1);
    const left = await platform.sql<{ id: string }>(`select id from oidc_models where id like 'purge-%'`);
    expect(left.map((r) => r.id)).toEqual(['purge-recent']);
  });
});
