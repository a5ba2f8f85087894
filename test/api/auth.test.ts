import { describe, expect, it } from 'vitest';
import { revokeKey } from '../../domain/accounts/service.ts';
import { hashKey } from '../../domain/accounts/keys.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

describe('authentication', () => {
  const expect401 = async (headers: Record<string, string>, code: string) => {
    const res = await http('/v3/customers', { headers });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe(code);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(res.body.suggestion).toEqual(expect.any(String));
  };

  it('answers a missing key with api_key_missing', () => expect401({}, 'api_key_missing'));
  it('answers a malformed key with api_key_malformed', () => expect401({ authorization: 'Bearer sk_nope' }, 'api_key_malformed'));
  it('answers a non-Bearer scheme with api_key_malformed', () => expect401({ authorization: 'Basic dXNlcjpwYXNz' }, 'api_key_malformed'));
  it('answers an unknown key with api_key_invalid', () =>
    expect401({ authorization: `Bearer bp_test_${'x'.repeat(40)}` }, 'api_key_invalid'));

  it('answers an expired key with api_key_expired', async () => {
    const key = await platform.newKey({ expires: '2099-01-01' });
    await platform.sql(`update api_keys set expires_at = now() - interval '1 second' where key_hash = $1`, [hashKey(key)]);
    await expect401({ authorization: `Bearer ${key}` }, 'api_key_expired');
  });

  it('answers a revoked key with api_key_revoked, at once', async () => {
    const key = await platform.newKey();
    expect((await http('/v3/customers', { key })).status).toBe(200);
    const [row] = await platform.sql<{ id: string }>('select id from api_keys where key_hash = $1', [hashKey(key)]);
    await revokeKey(platform.orm, row!.id);
    await expect401({ authorization: `Bearer ${key}` }, 'api_key_revoked');
  });

  it('stores only the hash and a masked form of a key', async () => {
    const key = await platform.newKey();
    const rows = await platform.sql<{ key_hash: string; masked: string }>('select key_hash, masked from api_keys where key_hash = $1', [hashKey(key)]);
    expect(rows[0]!.masked).toBe(`bp_test_…${key.slice(-4)}`);
    const dump = JSON.stringify(await platform.sql('select * from api_keys'));
    expect(dump).not.toContain(key.slice(8));
  });
});

describe('permissions and scoping', () => {
  it('answers 403 naming the missing permission for a restricted key', async () => {
    const key = await platform.newKey({ type: 'restricted', mode: 'test', permissions: ['billing:read'] });
    expect(key.startsWith('bp_rk_test_')).toBe(true);
    const res = await http('/v3/customers', { key });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'permission_denied', required_permission: 'crm:read' });
    expect(res.body.detail).toContain('crm:read');
  });

  it('lets write imply read, and refuses write to a read-only key', async () => {
    const writer = await platform.newKey({ type: 'restricted', permissions: ['crm:write'] });
    expect((await http('/v3/customers', { key: writer })).status).toBe(200);
    const reader = await platform.newKey({ type: 'restricted', permissions: ['crm:read'] });
    expect((await http('/v3/customers', { key: reader })).status).toBe(200);
    const denied = await http('/v3/customers', { key: reader, body: { name: 'Ada' } });
    expect(denied.status).toBe(403);
    expect(denied.body.required_permission).toBe('crm:write');
  });

  it('hides another account\'s and the other mode\'s records behind 404', async () => {
    const owner = await platform.newKey({ type: 'test' });
    const created = await http('/v3/customers', { key: owner, body: { name: 'Grace Hopper' } });
    expect(created.status).toBe(201);
    const id = created.body.id;

    const sameAccountLive = await platform.newKey({ type: 'live' });
    const otherAccount = await platform.newKey({ type: 'test', accountId: await platform.newAccount() });
    for (const key of [sameAccountLive, otherAccount]) {
      const get = await http(`/v3/customers/${id}`, { key });
      expect(get.status).toBe(404);
      expect(get.body.code).toBe('not_found');
      const patch = await http(`/v3/customers/${id}`, { key, method: 'PATCH', body: { name: 'Hijacked' } });
      expect(patch.status).toBe(404);
      const list = await http('/v3/customers', { key });
      expect(list.body.data.map((c: { id: string }) => c.id)).not.toContain(id);
    }
    const still = await http(`/v3/customers/${id}`, { key: owner });
    expect(still.body.name).toBe('Grace Hopper');
    expect(still.body.livemode).toBe(false);
  });
});
