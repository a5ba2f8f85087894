import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { dashboardRouter } from '../../domain/dashboard/router.ts';
import type { DashboardRole, DashboardSession } from '../../domain/dashboard/session.ts';
import { createCallerFactory } from '../../domain/dashboard/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

const createCaller = createCallerFactory(dashboardRouter);

function session(role: DashboardRole, accountId = platform.accountId): DashboardSession {
  return { sessionId: `ses_${role}`, userId: `usr_${role}`, email: `${role}@example.com`, accountId, role, csrfToken: 'csrf' };
}

/** A caller as the HTTP adapter builds it: `csrfValid` is what checkCsrf said about the request. */
function as(role: DashboardRole | null, opts: { csrfValid?: boolean; accountId?: string } = {}) {
  return createCaller({
    orm: platform.orm, deps: platform.api.deps, requestId: 'req_test',
    session: role ? session(role, opts.accountId) : null, csrfValid: opts.csrfValid ?? true,
  });
}

async function trpcCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof TRPCError) return err.code;
    throw err;
  }
  throw new Error('expected the call to be refused');
}

describe('the dashboard router', () => {
  it('refuses every call without a session, reads included', async () => {
    expect(await trpcCode(as(null).me())).toBe('UNAUTHORIZED');
    expect(await trpcCode(as(null).keys.list({ mode: 'test' }))).toBe('UNAUTHORIZED');
  });

  it('lets a viewer read but not create, roll or revoke keys', async () => {
    const viewer = as('viewer');
    expect((await viewer.me()).can).toEqual({ manageKeys: false, resendWebhooks: false, manageMembers: false, manageOAuthClients: false });
    expect(await viewer.keys.list({ mode: 'test' })).toEqual(expect.any(Array));
    expect(await trpcCode(viewer.keys.create({ name: 'nope', mode: 'test' }))).toBe('FORBIDDEN');
    const { key } = await as('developer').keys.create({ name: 'dev key', mode: 'test' });
    expect(await trpcCode(viewer.keys.revoke({ keyId: key.id }))).toBe('FORBIDDEN');
    expect(await trpcCode(viewer.keys.roll({ keyId: key.id, overlapHours: 1 }))).toBe('FORBIDDEN');
    expect(await trpcCode(viewer.webhooks.resend({ mode: 'test', endpointId: 'we_x', deliveryId: 'wd_x' }))).toBe('FORBIDDEN');
    const listed = await viewer.keys.list({ mode: 'test' });
    expect(listed.find((k) => k.id === key.id)).toMatchObject({ status: 'active', key: expect.stringMatching(/^bp_test_…/) });
    expect(JSON.stringify(listed)).not.toContain('secret');
  });

  it('refuses a change without the CSRF token whatever the role', async () => {
    expect(await trpcCode(as('owner', { csrfValid: false }).keys.create({ name: 'x', mode: 'test' }))).toBe('FORBIDDEN');
    // Reads do not need it (the app sends it anyway).
    expect(await as('owner', { csrfValid: false }).keys.list({ mode: 'test' })).toEqual(expect.any(Array));
  });

  it('creates a key whose secret is shown once and works on /v3, then revokes it', async () => {
    const dev = as('developer');
    const { key, secret } = await dev.keys.create({ name: 'checkout', mode: 'test' });
    expect(secret).toMatch(/^bp_test_/);
    expect(key).toMatchObject({ name: 'checkout', mode: 'test', status: 'active', last_used: 'Never' });
    expect((await http('/v3/customers', { key: secret })).status).toBe(200);
    await dev.keys.revoke({ keyId: key.id });
    const refused = await http('/v3/customers', { key: secret });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('api_key_revoked');
    expect(await trpcCode(dev.keys.revoke({ keyId: key.id }))).toBe('CONFLICT');
  });

  it('names the bad field of a key it cannot create', async () => {
    const err = await as('developer').keys.create({ name: 'r', mode: 'test', restricted: true, permissions: ['nosuch:read'] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCError);
    expect((err as TRPCError).code).toBe('UNPROCESSABLE_CONTENT');
    expect((err as TRPCError).message).toContain('permissions: unknown permission(s) nosuch:read');
  });

  it("never reaches another account's keys", async () => {
    const other = await platform.newAccount();
    const { key } = await as('owner', { accountId: other }).keys.create({ name: 'theirs', mode: 'test' });
    expect(await trpcCode(as('owner').keys.revoke({ keyId: key.id }))).toBe('NOT_FOUND');
    expect(await trpcCode(as('owner').keys.roll({ keyId: key.id, overlapHours: 0 }))).toBe('NOT_FOUND');
    expect((await as('owner').keys.list({ mode: 'test' })).some((k) => k.id === key.id)).toBe(false);
  });

  it('rolls a key: the new one works at once, the old one until the overlap ends', async () => {
    const dev = as('developer');
    const { key, secret: oldSecret } = await dev.keys.create({ name: 'rolling', mode: 'test', restricted: true, permissions: ['crm:read'] });
    const kept = await dev.keys.roll({ keyId: key.id, overlapHours: 24 });
    expect(kept.key).toMatchObject({ name: 'rolling', permissions: ['crm:read'], status: 'active' });
    expect(Date.parse(kept.rolled.expires_at!) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect((await http('/v3/customers', { key: kept.secret })).status).toBe(200);
    expect((await http('/v3/customers', { key: oldSecret })).status).toBe(200);

    const now = await dev.keys.roll({ keyId: kept.key.id, overlapHours: 0 });
    const refused = await http('/v3/customers', { key: kept.secret });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('api_key_expired');
    expect((await http('/v3/customers', { key: now.secret })).status).toBe(200);
    expect(await trpcCode(dev.keys.roll({ keyId: kept.key.id, overlapHours: 1 }))).toBe('CONFLICT');
  });

  it('shows the request log with filters and each failure’s problem document, and the usage', async () => {
    const dev = as('developer');
    const a = await dev.keys.create({ name: 'log a', mode: 'test' });
    const b = await dev.keys.create({ name: 'log b', mode: 'test' });
    expect((await http('/v3/customers', { key: a.secret })).status).toBe(200);
    const missing = await http('/v3/customers/cus_missing', { key: a.secret });
    expect(missing.status).toBe(404);
    expect((await http('/v3/customers', { key: b.secret })).status).toBe(200);
    await platform.api.deps.requestLog.flush();

    const failed = await dev.requests.list({ mode: 'test', keyId: a.key.id, status: '4xx' });
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ path: '/v3/customers/cus_missing', status: 404, request_id: missing.headers.get('request-id') });
    expect(failed[0]!.problem).toMatchObject({ code: 'not_found', status: 404, request_id: missing.headers.get('request-id') });
    expect(await dev.requests.list({ mode: 'test', keyId: a.key.id, status: '2xx' })).toEqual([expect.objectContaining({ path: '/v3/customers', problem: null })]);
    expect((await dev.requests.list({ mode: 'test', path: '/v3/customers/cus_' })).map((r) => r.status)).toEqual([404]);
    expect(await dev.requests.list({ mode: 'test', status: 'bogus' })).toEqual([]);
    expect(await dev.requests.list({ mode: 'live' })).toEqual([]);
    // Another account's dashboard sees none of it.
    expect(await as('owner', { accountId: await platform.newAccount() }).requests.list({ mode: 'test' })).toEqual([]);

    const usage = await dev.usage.summary({ mode: 'test' });
    expect(usage).toMatchObject({ daily_limit: 10_000, busiest_key_today: 2 });
    expect(usage.requests_today).toBeGreaterThanOrEqual(3);
    expect(usage.requests_last_minute).toBeGreaterThanOrEqual(3);
    expect(usage.success_rate).toBeGreaterThan(0);
    expect(usage.success_rate).toBeLessThan(1);
    expect(usage.days).toHaveLength(30);
    expect(usage.days.at(-1)).toMatchObject({ day: new Date().toISOString().slice(0, 10), requests: usage.requests_today });
  });

  it('registers OAuth clients for admins only, the secret once, first-party clients for owners only', async () => {
    const input = {
      name: 'Partner app', type: 'confidential' as const, mode: 'test' as const, redirectUris: ['https://partner.example.com/cb'],
      grantTypes: ['authorization_code' as const, 'client_credentials' as const], scopes: ['openid', 'crm:read'],
    };
    expect(await trpcCode(as('developer').oauthClients.create(input))).toBe('FORBIDDEN');
    expect(await trpcCode(as('admin').oauthClients.create({ ...input, firstParty: true }))).toBe('FORBIDDEN');
    const { client, secret } = await as('admin').oauthClients.create(input);
    expect(secret).toEqual(expect.any(String));
    expect(client).toMatchObject({ name: 'Partner app', type: 'confidential', mode: 'test', status: 'active' });
    const listed = await as('viewer').oauthClients.list();
    expect(listed.map((c) => c.id)).toContain(client.id);
    expect(JSON.stringify(listed)).not.toContain(secret!);
    expect((await as('owner').oauthClients.create({ ...input, name: 'Our app', firstParty: true })).client.first_party).toBe(true);
    expect(await trpcCode(as('owner', { accountId: await platform.newAccount() }).oauthClients.revoke({ clientId: client.id }))).toBe('NOT_FOUND');
    expect(await trpcCode(as('viewer').oauthClients.revoke({ clientId: client.id }))).toBe('FORBIDDEN');
    expect((await as('admin').oauthClients.revoke({ clientId: client.id })).status).toBe('revoked');
    const bad = await as('admin').oauthClients.create({ ...input, redirectUris: ['http://evil.example.com/cb'] }).catch((e: unknown) => e);
    expect((bad as TRPCError).code).toBe('UNPROCESSABLE_CONTENT');
    expect((bad as TRPCError).message).toContain('redirect_uris.0');
  });
});
