import { mountIdentityPages } from '../../api/v3/identity/pages.ts';
import { Migration0090IdentityUsersSessions } from '../../db/migrations/0090-identity-users-sessions.ts';
import { Migration0091IdentityOauth } from '../../db/migrations/0091-identity-oauth.ts';
import { Migration0092IdentityOauthKeyActivation } from '../../db/migrations/0092-identity-oauth-key-activation.ts';
import { Migration0093IdentityViewerTokensRead } from '../../db/migrations/0093-identity-viewer-tokens-read.ts';
import { Migration0150LoginThrottleGcra } from '../../db/migrations/0150-login-throttle-gcra.ts';
import { Migration0168IdentityOidcByClient } from '../../db/migrations/0168-identity-oidc-by-client.ts';
import { defineArea } from '../../platform/area.ts';

/**
 * Identity: dashboard users, their memberships and sessions (sign-in at /dashboard/session), and
 * the OAuth 2.0 / OpenID Connect provider at /oauth. docs/oauth.md describes it.
 */
export const identityArea = defineArea({
  name: 'identity',
  permissions: [],
  migrations: [
    { name: '0090-identity-users-sessions', class: Migration0090IdentityUsersSessions },
    { name: '0091-identity-oauth', class: Migration0091IdentityOauth },
    { name: '0092-identity-oauth-key-activation', class: Migration0092IdentityOauthKeyActivation },
    { name: '0093-identity-viewer-tokens-read', class: Migration0093IdentityViewerTokensRead },
    { name: '0150-login-throttle-gcra', class: Migration0150LoginThrottleGcra },
    { name: '0168-identity-oidc-by-client', class: Migration0168IdentityOidcByClient },
  ],
  pages: { prefixes: ['/dashboard/session', '/oauth', '/.well-known/'], mount: mountIdentityPages },
});
