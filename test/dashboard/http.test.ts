import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { newUser, signIn } from './sessions.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

const newKey = { name: 'over http', mode: 'test' };

describe('the dashboard API over HTTP', () => {
  it('needs the session cookie for every call', async () => {
    const owner = await signIn(platform, await newUser(platform, 'owner'));
    expect((await owner.call('query', 'me', undefined, { cookie: null })).status).toBe(401);
    expect((await owner.call('query', 'me', undefined, { cookie: 'bp_session=forged' })).status).toBe(401);
    const me = await owner.call('query', 'me');
    expect(me.status).toBe(200);
    expect(me.body.result.data).toMatchObject({ user: { role: 'owner' }, account_id: platform.accountId });
  });

  it('refuses a change without the CSRF token of the session, or with another one', async () => {
    const owner = await signIn(platform, await newUser(platform, 'owner'));
    const other = await signIn(platform, await newUser(platform, 'owner'));
    for (const csrf of [null, 'forged', other.csrf]) {
      const res = await owner.call('mutation', 'keys.create', newKey, { csrf });
      expect(res.status, String(csrf)).toBe(403);
      expect(res.body.error.message).toContain('X-CSRF-Token');
    }
    const created = await owner.call('mutation', 'keys.create', newKey);
    expect(created.status).toBe(200);
    expect(created.body.result.data.secret).toMatch(/^bp_test_/);
    expect((await http('/v3/customers', { key: created.body.result.data.secret })).status).toBe(200);
  });

  it('lets a viewer read and refuses its changes, whatever the app shows', async () => {
    const viewer = await signIn(platform, await newUser(platform, 'viewer'));
    expect((await viewer.call('query', 'keys.list', { mode: 'test' })).status).toBe(200);
    const refused = await viewer.call('mutation', 'keys.create', newKey);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Your role (viewer) cannot do keys.create');
    expect((await viewer.call('mutation', 'members.add', { email: 'x@example.com', role: 'viewer' })).status).toBe(403);
  });

  it('lets developers manage keys but not the team; admins the team but not owners', async () => {
    const developer = await signIn(platform, await newUser(platform, 'developer'));
    const key = await developer.call('mutation', 'keys.create', newKey);
    expect(key.status).toBe(200);
    expect((await developer.call('mutation', 'keys.revoke', { keyId: key.body.result.data.key.id })).status).toBe(200);
    expect((await developer.call('mutation', 'members.add', { email: 'dev-added@example.com', role: 'viewer' })).status).toBe(403);

    const admin = await signIn(platform, await newUser(platform, 'admin'));
    const added = await admin.call('mutation', 'members.add', { email: 'admin-added@example.com', role: 'developer' });
    expect(added.status).toBe(200);
    const member = added.body.result.data.member;
    expect(member).toMatchObject({ email: 'admin-added@example.com', role: 'developer' });
    expect((await admin.call('mutation', 'members.changeRole', { userId: member.id, role: 'viewer' })).body.result.data.role).toBe('viewer');
    expect((await admin.call('mutation', 'members.changeRole', { userId: member.id, role: 'owner' })).status).toBe(403);
    expect((await admin.call('mutation', 'members.add', { email: 'new-owner@example.com', role: 'owner' })).status).toBe(403);
    const list = await admin.call('query', 'members.list');
    expect(list.body.result.data.map((m: { email: string }) => m.email)).toContain('admin-added@example.com');
  });

  it('ends with the session', async () => {
    const owner = await signIn(platform, await newUser(platform, 'owner'));
    const out = await fetch(`${platform.url}/dashboard/session`, { method: 'DELETE', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrf, accept: 'application/json' } });
    expect(out.status).toBeLessThan(300);
    expect((await owner.call('query', 'me')).status).toBe(401);
  });
});
