import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

let platform: TestPlatform;
const TOKEN = 'test-admin-token-0123456789';

beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

async function trpc(path: string, opts: { token?: string; input?: unknown; mutation?: boolean } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const url = `${platform.url}/admin/trpc/${path}` + (!opts.mutation && opts.input !== undefined ? `?input=${encodeURIComponent(JSON.stringify(opts.input))}` : '');
  const res = await fetch(url, { method: opts.mutation ? 'POST' : 'GET', headers, body: opts.mutation ? JSON.stringify(opts.input ?? {}) : undefined });
  return { status: res.status, body: (await res.json()) as any };
}

describe('tRPC admin API', () => {
  it('refuses every call without the admin token, and with a wrong one', async () => {
    expect((await trpc('keys.list')).status).toBe(401);
    expect((await trpc('keys.list', { token: 'wrong-token-0123456789' })).status).toBe(401);
    expect((await trpc('keys.create', { mutation: true, input: { name: 'x', type: 'test' } })).status).toBe(401);
  });

  it('refuses every call when no ADMIN_TOKEN is configured', async () => {
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, temporal: null, adminToken: undefined, presentedToken: 'anything' }));
    await expect(caller.accounts.list()).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('creates, lists and revokes keys over HTTP; the created key works on /v3 until revoked', async () => {
    const account = await trpc('accounts.create', { token: TOKEN, mutation: true, input: { name: 'Admin Co', tier: 'premium' } });
    expect(account.status).toBe(200);
    const accountId = account.body.result.data.id;
    const created = await trpc('keys.create', { token: TOKEN, mutation: true, input: { name: 'ops', type: 'restricted', mode: 'live', permissions: ['crm:read'], accountId } });
    expect(created.status).toBe(200);
    const key = created.body.result.data;
    expect(key.key).toMatch(/^bp_rk_live_[0-9A-Za-z]{40}$/);
    expect(key.masked).toBe(`bp_rk_live_…${key.key.slice(-4)}`);

    const http = client(platform.url);
    const ok = await http('/v3/customers', { key: key.key });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-limit')).toBe('5000');

    const listed = await trpc('keys.list', { token: TOKEN, input: { accountId } });
    expect(listed.body.result.data).toHaveLength(1);
    expect(listed.body.result.data[0]).toMatchObject({ id: key.id, key: key.masked, status: 'active', permissions: ['crm:read'] });
    expect(JSON.stringify(listed.body)).not.toContain(key.key);

    await platform.api.deps.requestLog.flush();
    const usage = await trpc('keys.usage', { token: TOKEN, input: { keyId: key.id } });
    expect(usage.body.result.data).toMatchObject({ requests_today: 1, success_rate: 1 });

    const revoked = await trpc('keys.revoke', { token: TOKEN, mutation: true, input: { keyId: key.id } });
    expect(revoked.body.result.data.status).toBe('revoked');
    expect((await http('/v3/customers', { key: key.key })).body.code).toBe('api_key_revoked');
    const again = await trpc('keys.revoke', { token: TOKEN, mutation: true, input: { keyId: key.id } });
    expect(again.status).toBe(409);
  });

  it('reports bad input with the field named', async () => {
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, temporal: null, adminToken: TOKEN, presentedToken: TOKEN }));
    await expect(caller.keys.create({ name: 'bad', type: 'restricted', permissions: ['crm:delete'] }))
      .rejects.toMatchObject({ code: 'UNPROCESSABLE_CONTENT', message: expect.stringContaining('crm:delete') });
  });
});
