import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type Request, type Response, type Router } from 'express';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AppDeps } from '../../api/http/deps.ts';
import { state } from '../../api/http/context.ts';
import { DASHBOARD_BUILD_DIR } from './assets.ts';
import { dashboardRouter } from './router.ts';
import { checkCsrf, sessionFromRequest } from './session.ts';
import { isUnexpectedTrpcError } from '../../platform/trpc-errors.ts';

/**
 * The dashboard's own policy: scripts, styles and images from this origin only (Vite emits no
 * inline script), API calls to this origin, no framing, forms post only here.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** Paths under /dashboard that are APIs, never the app's pages (the identity area answers /dashboard/session). */
const API_PATHS = /^\/dashboard\/(?:trpc|session)(?:\/|$)/;

/** Mounts the tRPC API, the hashed assets (cached for a year) and the app's index.html for every other page. */
export function mountDashboard(router: Router, deps: AppDeps): void {
  router.use('/dashboard/trpc', createExpressMiddleware({
    router: dashboardRouter,
    createContext: async ({ req, res }) => {
      const session = await sessionFromRequest(deps.orm, req);
      return {
        orm: deps.orm, deps, session, requestId: state(res).requestId,
        csrfValid: session ? checkCsrf(session, req) : false,
      };
    },
    onError: ({ error, path, ctx }) => {
      if (isUnexpectedTrpcError(error)) {
        deps.logger.error('dashboard API call failed', { error: error.cause ?? error, procedure: path ?? null, request_id: ctx?.requestId });
      }
    },
  }));

  router.use('/dashboard/assets', express.static(join(DASHBOARD_BUILD_DIR, 'assets'), {
    index: false, fallthrough: true, immutable: true, maxAge: '365d',
    setHeaders: (res) => res.setHeader('Content-Security-Policy', DASHBOARD_CSP),
  }));

  // The app routes in the browser: every other GET under /dashboard that wants HTML gets index.html.
  router.get(/^\/dashboard(?:\/.*)?$/, (req: Request, res: Response, next) => {
    if (API_PATHS.test(req.path) || req.path.startsWith('/dashboard/assets/')) return next();
    const index = join(DASHBOARD_BUILD_DIR, 'index.html');
    if (!existsSync(index)) {
      res.status(503).setHeader('Retry-After', '30');
      res.type('text/plain').send('The dashboard is not built yet: run `npm run build` (npm start builds it when missing).');
      return;
    }
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index);
  });
}
