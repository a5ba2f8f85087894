import * as oidc from 'openid-client';
import { describe, expect, it } from 'vitest';
import { permissionScopes } from '../../domain/registry.ts';
import { createOAuthClient } from '../../domain/identity/public.ts';
import type { RunningApi } from '../../api/server.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { TcpProxy } from '../support/tcp-proxy.ts';
import { useProxiedPlatform } from '../support/use-platform.ts';

// A second API whose database connections pass through a proxy the test cuts.
let platform: TestPlatform, proxy: TcpProxy, api: RunningApi, accountId: string;
useProxiedPlatform('postgres', { ownAccount: true }, (t) => ({ platform, proxy, api, accountId } = t));

describe('OAuth while PostgreSQL is down', () => {
  it('the token endpoint and /v3 with an access token answer 503 with Retry-After, then work again', async () => {
    const client = await createOAuthClient(platform.orm, {
      accountId, name: 'Machine', type: 'confidential', grantTypes: ['client_credentials'], redirectUris: [], scopes: ['crm:read'],
    }, permissionScopes);
    const config = await oidc.discovery(new URL(`${api.url}/oauth`), client.client_id, undefined,
      oidc.ClientSecretBasic(client.client_secret!), { execute: [oidc.allowInsecureRequests] });
    const { access_token: token } = await oidc.clientCredentialsGrant(config, { scope: 'crm:read' });

    for (const mode of ['refuse', 'hang'] as const) {
      await proxy.cut(mode);
      try {
        const tokenRes = await fetch(`${api.url}/oauth/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
          },
          body: 'grant_type=client_credentials&scope=crm%3Aread',
        });
        expect(tokenRes.status, mode).toBe(503);
        expect(Number(tokenRes.headers.get('retry-after'))).toBeGreaterThan(0);
        const v3 = await fetch(`${api.url}/v3/customers`, { headers: { authorization: `Bearer ${token}` } });
        expect(v3.status, mode).toBe(503);
        expect(v3.headers.get('content-type')).toContain('application/problem+json');
        expect(Number(v3.headers.get('retry-after'))).toBeGreaterThan(0);
      } finally {
        await proxy.restore();
      }
    }
    const after = await fetch(`${api.url}/v3/customers`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(200);
  }, 60_000);
});
