import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { newId } from '../platform/ids.ts';
import { ApiError } from '../platform/errors.ts';
import { adminRouter } from './admin/router.ts';
import { createContextInner } from './admin/trpc.ts';
import type { AppDeps } from './deps.ts';
import { hasBody, isJsonContentType } from './http/body.ts';
import { state, type Format } from './http/context.ts';
import { fallbackHandler } from './http/fallback.ts';
import { errorHandler, sendProblem } from './http/problems.ts';
import { routeDispatcher, type RouteSpec } from './http/route.ts';
import { sendDocument } from './http/send.ts';
import { buildOpenApi, type ExtraRoute } from './openapi.ts';
import { customerRoutes } from './v3/customers.ts';
import { catalogRoutes } from './v3/catalog.ts';
import { crmRoutes } from './v3/crm.ts';
import { inventoryRoutes } from './v3/inventory.ts';
import { marketplaceRoutes } from './v3/marketplace.ts';
import { orderRoutes } from './v3/orders.ts';
import { reportRoutes } from './v3/reports.ts';
import { storeRoutes } from './v3/stores.ts';
import { eventRoutes } from './v3/events.ts';
import { webhookRoutes } from './v3/webhooks.ts';
import { paymentRoutes } from './v3/payments.ts';
import { billingRoutes } from './v3/billing.ts';

export const API_VERSION = '3.2.1';

/** Every /v3 route, in one list: mounted, validated and documented from the same definitions. */
export const v3Routes: RouteSpec<any, any, any>[] = [...customerRoutes, ...crmRoutes, ...storeRoutes, ...catalogRoutes, ...inventoryRoutes, ...orderRoutes, ...reportRoutes, ...marketplaceRoutes, ...paymentRoutes, ...billingRoutes, ...webhookRoutes, ...eventRoutes];

const extraRoutes: ExtraRoute[] = [
  { method: 'get', path: '/healthz', summary: 'Liveness: the process is up', tag: 'Operations', security: false },
  { method: 'get', path: '/readyz', summary: 'Readiness: PostgreSQL and Temporal reachable, a worker polling', tag: 'Operations', security: false },
  { method: 'get', path: '/v3/openapi.json', summary: 'This OpenAPI 3.1 document', tag: 'Operations', security: false },
  { method: 'get', path: '/docs', summary: 'Human-readable API reference', tag: 'Operations', security: false },
];

const XML_TYPES = ['application/xml', 'text/xml', 'application/problem+xml'];
const JSON_TYPES = ['application/json', 'application/problem+json', 'application/*', '*/*'];

/** Picks JSON or XML from `Accept` (q-values honoured); null when neither is acceptable. */
export function negotiate(accept: string | undefined): Format | null {
  if (!accept) return 'json';
  let best: { format: Format; q: number } | null = null;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    const format: Format | null = XML_TYPES.includes(type!) ? 'xml' : JSON_TYPES.includes(type!) ? 'json' : null;
    if (format && q > 0 && (!best || q > best.q)) best = { format, q };
  }
  return best?.format ?? null;
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', 'loopback');

  // Request id, access log and content negotiation for everything the app serves.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const st = state(res);
    st.requestId = newId('request');
    st.startedAt = process.hrtime.bigint();
    st.format = 'json';
    res.setHeader('Request-Id', st.requestId);
    res.once('finish', () => logRequest(deps, req, res));

    const format = negotiate(req.headers.accept);
    if (!format) {
      return next(new ApiError({
        status: 406, code: 'not_acceptable', title: 'Not Acceptable',
        detail: `Cannot answer with ${req.headers.accept}.`,
        suggestion: 'Send Accept: application/json (the default) or Accept: application/xml.',
      }));
    }
    st.format = format;
    if (['POST', 'PUT', 'PATCH'].includes(req.method) && hasBody(req) && !isJsonContentType(req) && !req.path.startsWith('/admin/')) {
      return next(new ApiError({
        status: 415, code: 'unsupported_media_type', title: 'Unsupported Media Type',
        detail: `Request bodies must be JSON; got ${req.headers['content-type'] ?? 'no Content-Type'}.`,
        suggestion: 'Send the body as JSON with the header Content-Type: application/json.',
      }));
    }
    next();
  });

  // The /v3 API first: the hot path passes no other layer.
  app.use(routeDispatcher(v3Routes, deps));

  app.get('/healthz', (_req, res) => void sendDocument(res, 200, { status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    const [database, temporal] = await Promise.all([
      deps.pool.query('select 1').then(() => true, () => false),
      deps.temporal.probe(),
    ]);
    const ready = database && temporal.reachable && temporal.workerPolling;
    await sendDocument(res, ready ? 200 : 503, {
      status: ready ? 'ready' : 'not_ready',
      checks: { postgres: database, temporal: temporal.reachable, worker_polling: temporal.workerPolling },
    }, ready ? {} : { headers: { 'Retry-After': '5' } });
  });

  const openapi = buildOpenApi(v3Routes, extraRoutes, API_VERSION);
  app.get('/v3/openapi.json', (_req, res) => void sendDocument(res, 200, openapi));
  mountDocs(app);

  app.all(/^\/v2(\/.*)?$/, (req, res) => void sendProblem(req, res, new ApiError({
    status: 410, code: 'version_gone', title: 'Gone',
    detail: 'API v2 reached end of support in December 2025 and no longer answers.',
    suggestion: `Move to /v3: try ${req.path.replace(/^\/v2/, '/v3')} and see /docs for what changed.`,
    headers: { Link: `<${req.path.replace(/^\/v2/, '/v3')}>; rel="successor-version"` },
  })));

  app.use('/admin/trpc', createExpressMiddleware({
    router: adminRouter,
    createContext: ({ req }) => createContextInner({
      orm: deps.orm,
      temporal: deps.temporal,
      adminToken: deps.config.ADMIN_TOKEN,
      presentedToken: /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1],
    }),
  }));

  app.use(fallbackHandler([...v3Routes, ...extraRoutes]));
  app.use(errorHandler(deps.logger));
  return app;
}

function mountDocs(app: express.Express): void {
  const require = createRequire(import.meta.url);
  const swaggerDir = dirname(require.resolve('swagger-ui-dist/package.json'));
  app.use('/docs/assets', express.static(swaggerDir, { index: false, maxAge: '1h' }));
  app.get('/docs', (_req, res) => {
    res.type('html').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Business Platform API v3</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="docs"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/v3/openapi.json', dom_id: '#docs', deepLinking: true });</script>
</body></html>`);
  });
}

function logRequest(deps: AppDeps, req: Request, res: Response): void {
  const st = state(res);
  const durationMs = Number(process.hrtime.bigint() - st.startedAt) / 1e6;
  const path = req.originalUrl.split('?')[0]!;
  if (path.startsWith('/v3/') && path !== '/v3/openapi.json') {
    deps.requestLog.add({
      requestId: st.requestId,
      accountId: st.auth?.accountId ?? null,
      apiKeyId: st.auth?.keyId ?? null,
      livemode: st.auth?.livemode ?? null,
      method: req.method,
      path,
      status: res.statusCode,
      durationMs,
      createdAt: new Date(),
    });
  }
  if (deps.logger.enabled('info')) {
    deps.logger.info('request', {
      request_id: st.requestId, method: req.method, path, status: res.statusCode,
      duration_ms: Math.round(durationMs * 100) / 100, key_id: st.auth?.keyId,
    });
  }
}
