import { permissionScopes } from '../../domain/registry.ts';
import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { FailedAuthThrottle, createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
const TOKEN = 'test-admin-token-0123456789';
/** Error lines the platform logs (warn and error go to `err`). */
const errorLines: Record<string, any>[] = [];

usePlatform({
  log: { out: { write: () => true }, err: { write: (line: string) => errorLines.push(JSON.parse(line)) } },
}, (t) => ({ platform } = t));

async function trpc(path: string, opts: { token?: string; input?: unknown; mutation?: boolean; from?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  // The API trusts X-Forwarded-For from loopback (a proxy in front of it): each test's own client address.
  if (opts.from) headers['x-forwarded-for'] = opts.from;
  const url = `${platform.url}/admin/trpc/${path}` + (!opts.mutation && opts.input !== undefined ? `?input=${encodeURIComponent(JSON.stringify(opts.input))}` : '');
  const res = await fetch(url, { method: opts.mutation ? 'POST' : 'GET', headers, body: opts.mutation ? JSON.stringify(opts.input ?? {}) : undefined });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers, requestId: res.headers.get('request-id') };
}

describe('tRPC admin API', () => {
  it('refuses every call without the admin token, and with a wrong one', async () => {
    expect((await trpc('keys.list')).status).toBe(401);
    expect((await trpc('keys.list', { token: 'wrong-token-0123456789' })).status).toBe(401);
    expect((await trpc('keys.create', { mutation: true, input: { name: 'x', type: 'test' } })).status).toBe(401);
  });

  it('refuses every call when no ADMIN_TOKEN is configured', async () => {
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: null, adminToken: undefined, presentedToken: 'anything' }));
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
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: null, adminToken: TOKEN, presentedToken: TOKEN }));
    await expect(caller.keys.create({ name: 'bad', type: 'restricted', permissions: ['crm:delete'] }))
      .rejects.toMatchObject({ code: 'UNPROCESSABLE_CONTENT', message: expect.stringContaining('crm:delete') });
  });

  it('answers an unexpected (database) error with a generic message and the request id, never SQL or a stack; logs the details', async () => {
    await platform.sql('alter table api_keys rename to api_keys_away');
    let res: Awaited<ReturnType<typeof trpc>>;
    try {
      res = await trpc('keys.list', { token: TOKEN, from: '198.51.100.1' });
    } finally {
      await platform.sql('alter table api_keys_away rename to api_keys');
    }
    expect(res.status).toBe(500);
    const text = JSON.stringify(res.body);
    expect(res.requestId).toMatch(/^req_/);
    expect(res.body.error.message).toBe(`Internal error (request id ${res.requestId}); the details are in the server log.`);
    expect(res.body.error.data).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', requestId: res.requestId });
    expect(res.body.error.data).not.toHaveProperty('stack');
    expect(text).not.toMatch(/api_keys|select|relation|\.ts:\d+|at /);

    const logged = errorLines.find((l) => l.msg === 'admin API call failed' && l.request_id === res.requestId);
    expect(logged).toMatchObject({ level: 'error', procedure: 'keys.list', error: { message: expect.stringContaining('api_keys'), code: '42P01' } });
    expect(logged!.error.stack).toEqual(expect.any(String));
  });

  it('keeps the message of a domain error (ApiError), which is safe to show', async () => {
    const res = await trpc('keys.revoke', { token: TOKEN, mutation: true, input: { keyId: 'key_missing' }, from: '198.51.100.2' });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toContain('key_missing');
    expect(res.body.error.data).not.toHaveProperty('stack');
  });

  it('throttles an address after 10 failed tokens in a minute (429 with Retry-After, even with the right token); others are unaffected', async () => {
    const attacker = '203.0.113.7';
    for (let i = 0; i < 10; i++) {
      expect((await trpc('accounts.list', { token: `guess-${i}-0123456789abcdef`, from: attacker })).status).toBe(401);
    }
    const throttled = await trpc('accounts.list', { token: `guess-11-0123456789abcdef`, from: attacker });
    expect(throttled.status).toBe(429);
    expect(throttled.body.error.data.code).toBe('TOO_MANY_REQUESTS');
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await trpc('accounts.list', { token: TOKEN, from: attacker })).status).toBe(429);
    expect((await trpc('accounts.list', { token: TOKEN, from: '203.0.113.8' })).status).toBe(200);
  });
});

describe('FailedAuthThrottle', () => {
  it('allows a burst of the limit per address, then one failure per window / limit', () => {
    const throttle = new FailedAuthThrottle(3, 60_000);
    const t0 = Date.UTC(2026, 0, 1, 12, 0, 10);
    for (let i = 0; i < 2; i++) throttle.recordFailure('a', t0);
    expect(throttle.blockedFor('a', t0)).toBe(0);
    throttle.recordFailure('a', t0 + 1000);
    expect(throttle.blockedFor('a', t0 + 1000)).toBe(19_000); // one more 20 s after the burst began
    expect(throttle.blockedFor('b', t0 + 1000)).toBe(0);
    expect(throttle.blockedFor('a', t0 + 20_000)).toBe(0);
    throttle.recordFailure('a', t0 + 20_000);
    expect(throttle.blockedFor('a', t0 + 20_000)).toBe(20_000);
    // A quiet window gives the whole burst back.
    for (let i = 0; i < 3; i++) throttle.recordFailure('a', t0 + 200_000);
    expect(throttle.blockedFor('a', t0 + 200_000)).toBe(20_000);
  });

  it('has no window edge: failures just before a minute\'s end still count just after it', () => {
    const throttle = new FailedAuthThrottle(3, 60_000);
    const minute = Date.UTC(2026, 0, 1, 12, 1, 0);
    for (let i = 0; i < 3; i++) throttle.recordFailure('a', minute - 500);
    expect(throttle.blockedFor('a', minute + 500)).toBe(19_000);
  });
});
