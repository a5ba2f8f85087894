import type { Router } from 'express';
import type { AppDeps } from '../../http/deps.ts';
import { nativePool } from '../../../db/pool.ts';
import { LoginThrottle } from '../../../domain/identity/throttle.ts';
import { mountSessionRoutes } from './session.ts';

/** The identity area's pages: the dashboard's sign-in endpoints and the OAuth server. */
export function mountIdentityPages(router: Router, deps: AppDeps): void {
  const throttle = new LoginThrottle(() => nativePool(deps.orm));
  mountSessionRoutes(router, deps, throttle);
}
