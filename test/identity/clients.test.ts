import { describe, expect, it } from 'vitest';
import { permissionScopes } from '../../domain/registry.ts';
import { createOAuthClient, listOAuthClients, revokeOAuthClient } from '../../domain/identity/public.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
usePlatform({}, (t) => ({ platform } = t));

const base = { name: 'Reporting app', type: 'confidential' as const, redirectUris: ['https://app.example.com/cb'], grantTypes: ['authorization_code' as const, 'refresh_token' as const], scopes: ['openid', 'billing:read'] };

describe('OAuth clients', () => {
  it('registers a confidential client with its secret shown once (stored as a hash), lists and revokes it', async () => {
    const account = await platform.newAccount();
    const created = await createOAuthClient(platform.orm, { ...base, accountId: account }, permissionScopes);
    expect(created).toMatchObject({ object: 'oauth_client', client_id: expect.stringMatching(/^oac_/), mode: 'test', status: 'active', first_party: false });
    expect(created.client_secret).toMatch(/^[\w-]{43}$/);
    const listed = await listOAuthClients(platform.orm, account);
    expect(listed.map((c) => c.id)).toEqual([created.id]);
    expect(JSON.stringify(listed)).not.toContain(created.client_secret);
    expect(JSON.stringify(await platform.sql('select * from oauth_clients'))).not.toContain(created.client_secret);

    const publicClient = await createOAuthClient(platform.orm, { ...base, type: 'public', accountId: account, mode: 'live' });
    expect(publicClient.client_secret).toBeUndefined();
    expect(publicClient.mode).toBe('live');

    expect((await revokeOAuthClient(platform.orm, { accountId: account, clientId: created.id })).status).toBe('revoked');
    await expect(revokeOAuthClient(platform.orm, { accountId: account, clientId: created.id })).rejects.toMatchObject({ status: 409 });
  });

  it('another account\'s client ids answer 404, like unknown ones', async () => {
    const mine = await platform.newAccount();
    const theirs = await createOAuthClient(platform.orm, { ...base, accountId: await platform.newAccount() });
    for (const clientId of [theirs.id, 'oac_nope', '\u0000'.repeat(3), 'x'.repeat(100_000)]) {
      await expect(revokeOAuthClient(platform.orm, { accountId: mine, clientId })).rejects.toMatchObject({ status: 404, code: 'not_found' });
    }
    expect(await listOAuthClients(platform.orm, mine)).toEqual([]);
  });

  it('refuses bad registrations, naming the field', async () => {
    const accountId = await platform.newAccount();
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '' }, 'name'],
      [{ name: 'a\u0000b' }, 'name'],
      [{ type: 'public', grantTypes: ['client_credentials'] }, 'grant_types'],
      [{ grantTypes: ['refresh_token'] }, 'grant_types'],
      [{ redirectUris: ['http://evil.example.com/cb'] }, 'redirect_uris.0'],
      [{ redirectUris: ['https://app.example.com/cb#x'] }, 'redirect_uris.0'],
      [{ redirectUris: [] }, 'redirect_uris'],
      [{ scopes: ['payments:delete'] }, 'scopes'],
      [{ scopes: ['nosuchscope:read'] }, 'scopes'],
      [{ scopes: ['x'.repeat(100_000)] }, 'scopes'],
    ];
    for (const [patch, path] of cases) {
      const err = await createOAuthClient(platform.orm, { ...base, accountId, ...patch } as never, permissionScopes).catch((e: unknown) => e);
      expect(err, JSON.stringify(patch).slice(0, 60)).toMatchObject({ status: 422, code: 'validation_failed' });
      expect((err as { errors: { path: string }[] }).errors.map((e) => e.path)).toContain(path);
    }
    // A loopback redirect (RFC 8252) and a private-use scheme are fine.
    await expect(createOAuthClient(platform.orm, { ...base, accountId, redirectUris: ['http://127.0.0.1:8765/cb', 'com.example.app:/cb'] }, permissionScopes)).resolves.toBeTruthy();
  });
});
