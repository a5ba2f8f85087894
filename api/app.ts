import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { createRequire } from 'node:module';
import { timingSafeEqual } from 'node:crypto';
import { dirname } from 'node:path';
import { newId } from '../platform/ids.ts';
import { ApiError } from '../platform/errors.ts';
import { withLogContext } from '../platform/log-context.ts';
import { httpDuration, httpRequests, renderMetrics } from '../platform/metrics.ts';
import { httpServerSpan } from '../platform/telemetry.ts';
import { adminRouter } from './admin/router.ts';
import { areaPages, pagePrefixes, v3Routes } from '../domain/registry.ts';
import { FailedAuthThrottle, createContextInner } from './admin/trpc.ts';
import { isUnexpectedTrpcError } from '../platform/trpc-errors.ts';
import type { AppDeps } from './http/deps.ts';
import { hasBody, isJsonContentType } from './http/body.ts';
import { state } from './http/context.ts';
import { fallbackHandler } from './http/fallback.ts';
import { acceptsAny, negotiate, notAcceptable } from './http/negotiate.ts';
import { binaryMediaTypes } from './http/route.ts';
import { ERROR_CODES } from './http/error-codes.ts';
import { errorHandler, sendProblem } from './http/problems.ts';
import { routeDispatcher } from './http/route.ts';
import { inlinePageCsp, setSecurityHeaders } from './http/security-headers.ts';
import { sendDocument } from './http/send.ts';
import { buildOpenApi, type ExtraRoute } from './openapi.ts';
import { signedDownloadDoc } from './v3/analytics/signed-download.ts';

export const API_VERSION = '3.2.1';

/** Every binary media type a /v3 route answers (see `binaryMediaTypes`). */
const BINARY_MEDIA_TYPES = [...new Set(v3Routes.flatMap(binaryMediaTypes))];


const readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.object({ postgres: z.boolean(), temporal: z.boolean(), worker_polling: z.boolean() }),
  /** What is down, when not ready. */
  detail: z.string().optional(),
  /** Request-log rows waiting to be written (kept while the database is down) and dropped over the bound. */
  request_log: z.object({ pending: z.number().int(), dropped: z.number().int() }),
});

/** How long /readyz waits for one dependency's check. */
const READY_CHECK_MS = 1000;

function withinBudget<T>(check: Promise<T>, onTimeout: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => { timer = setTimeout(() => resolve(onTimeout), READY_CHECK_MS); });
  return Promise.race([check, timeout]).finally(() => clearTimeout(timer));
}
const errorCodePage = z.object({
  code: z.string(), status: z.number().int(), title: z.string(), meaning: z.string(), suggestion: z.string(),
});

const extraRoutes: ExtraRoute[] = [
  {
    method: 'get', path: '/healthz', summary: 'Liveness: the process is up', tag: 'Operations', security: false,
    responses: { 200: { description: 'Up', schema: z.object({ status: z.literal('ok') }) } },
  },
  {
    method: 'get', path: '/readyz', summary: 'Readiness: PostgreSQL and Temporal reachable, a worker polling', tag: 'Operations', security: false,
    responses: { 200: { description: 'Ready', schema: readiness }, 503: { description: 'Not ready (see checks)', schema: readiness } },
  },
  {
    method: 'get', path: '/metrics', tag: 'Operations', security: false,
    summary: 'Prometheus metrics: from the same host, or with `Authorization: Bearer <METRICS_TOKEN>` when that is set',
    responses: { 200: { description: 'Prometheus text exposition format' }, 404: { description: 'Not allowed from here (answered as an unknown route)' } },
  },
  { method: 'get', path: '/v3/openapi.json', summary: 'This OpenAPI 3.1 document', tag: 'Operations', security: false },
  {
    method: 'get', path: '/docs', summary: 'Human-readable API reference', tag: 'Operations', security: false,
    responses: { 200: { description: 'An HTML page' } },
  },
  {
    method: 'get', path: '/docs/errors/{code}', summary: 'What an error code means and what to do (the `type` of its problem documents)',
    tag: 'Operations', security: false,
    pathParams: z.object({ code: z.string().describe('The problem\'s `code`, e.g. validation_failed') }),
    responses: {
      200: { description: 'An HTML page; with Accept: application/json, the same as JSON', schema: errorCodePage },
      404: { description: 'No such error code (a problem document)' },
    },
  },
  signedDownloadDoc,
];

/**
 * The OpenAPI document depends only on the route table, so it is generated once per process, on
 * its first request: generating it takes about half a second, which every API start (and every test
 * file) paid before. test/platform/areas.test.ts and the OpenAPI tests generate it eagerly.
 */
let openapi: Record<string, unknown> | undefined;
const openapiDocument = () => (openapi ??= buildOpenApi(v3Routes, extraRoutes, API_VERSION));

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
    setSecurityHeaders(req, res);
    const span = httpServerSpan(req.method, req.headers);
    res.once('finish', () => {
      logRequest(deps, req, res); // inside the span: the access log line carries the trace id
      span.finish(res.statusCode, st.route);
    });

    // The areas' pages (dashboard, OAuth) answer HTML, forms and JSON as their protocols say.
    if (pagePrefixes.some((prefix) => req.path.startsWith(prefix))) {
      return span.run(() => withLogContext({ request_id: st.requestId }, next));
    }
    const format = negotiate(req.headers.accept);
    // The /docs pages are HTML: a browser's `Accept: text/html` is theirs to answer. A header that
    // admits only a binary type some route answers (a PDF, a recording) is for that route to judge.
    if (!format && !(req.method === 'GET' && (req.path === '/docs' || req.path.startsWith('/docs/')))) {
      if (!acceptsAny(req.headers.accept, BINARY_MEDIA_TYPES)) return next(notAcceptable(req.headers.accept));
      st.binaryOnly = true;
    }
    st.format = format ?? 'json';
    if (['POST', 'PUT', 'PATCH'].includes(req.method) && hasBody(req) && !isJsonContentType(req) && !req.path.startsWith('/admin/')) {
      return next(new ApiError({
        status: 415, code: 'unsupported_media_type', title: 'Unsupported Media Type',
        detail: `Request bodies must be JSON; got ${req.headers['content-type'] ?? 'no Content-Type'}.`,
        suggestion: 'Send the body as JSON with the header Content-Type: application/json.',
      }));
    }
    // Every line logged while serving it carries the request id (the dispatcher adds account and mode).
    span.run(() => withLogContext({ request_id: st.requestId }, next));
  });

  // The /v3 API first: the hot path passes no other layer.
  app.use(routeDispatcher(v3Routes, deps));

  for (const pages of areaPages) {
    const router = express.Router();
    pages.mount(router, deps);
    app.use(router);
  }

  app.get('/healthz', (_req, res) => void sendDocument(res, 200, { status: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    // Each dependency is checked in parallel with its own budget: the answer comes within about
    // a second and names what is down, whatever hangs.
    const [database, temporal] = await Promise.all([
      withinBudget(deps.pool.query('select 1').then(() => true, () => false), false),
      withinBudget(deps.temporal.probe(), { reachable: false, workerPolling: false }),
    ]);
    const ready = database && temporal.reachable && temporal.workerPolling;
    const down = [
      ...(database ? [] : ['PostgreSQL is unreachable']),
      ...(temporal.reachable ? [] : ['Temporal is unreachable']),
      ...(temporal.reachable && !temporal.workerPolling ? ['no worker polls the task queue'] : []),
    ];
    await sendDocument(res, ready ? 200 : 503, {
      status: ready ? 'ready' : 'not_ready',
      checks: { postgres: database, temporal: temporal.reachable, worker_polling: temporal.workerPolling },
      ...(ready ? {} : { detail: `${down.join('; ')}.` }),
      request_log: deps.requestLog.stats(),
    }, ready ? {} : { headers: { 'Retry-After': '5' } });
  });

  app.get('/metrics', async (req, res, next) => {
    state(res).route = '/metrics';
    if (!metricsAllowed(deps.config.METRICS_TOKEN, req)) {
      return next(new ApiError({
        status: 404, code: 'route_not_found', title: 'Not Found', detail: 'No route GET /metrics.',
        suggestion: 'Scrape /metrics from the same host, or with `Authorization: Bearer <METRICS_TOKEN>` when METRICS_TOKEN is set.',
      }));
    }
    const { contentType, body } = await renderMetrics();
    res.setHeader('Content-Type', contentType);
    res.end(body);
  });

  app.get('/v3/openapi.json', (_req, res) => void sendDocument(res, 200, openapiDocument()));
  mountDocs(app);
  mountErrorPages(app);

  app.all(/^\/v2(\/.*)?$/, (req, res) => void sendProblem(req, res, new ApiError({
    status: 410, code: 'version_gone', title: 'Gone',
    detail: 'API v2 reached end of support in December 2025 and no longer answers.',
    suggestion: `Move to /v3: try ${req.path.replace(/^\/v2/, '/v3')} and see /docs for what changed.`,
    headers: { Link: `<${req.path.replace(/^\/v2/, '/v3')}>; rel="successor-version"` },
  })));

  const adminThrottle = new FailedAuthThrottle();
  app.use('/admin/trpc', createExpressMiddleware({
    router: adminRouter,
    createContext: ({ req, res }) => createContextInner({
      orm: deps.orm,
      temporal: deps.temporal,
      permissionScopes: deps.permissionScopes,
      adminToken: deps.config.ADMIN_TOKEN,
      presentedToken: /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1],
      requestId: state(res).requestId,
      clientIp: req.ip ?? req.socket.remoteAddress ?? 'unknown',
      throttle: adminThrottle,
    }),
    // The caller got a generic message with the request id; the details go to the log under it.
    onError: ({ error, path, ctx }) => {
      if (isUnexpectedTrpcError(error)) {
        deps.logger.error('admin API call failed', { error: error.cause ?? error, procedure: path ?? null, request_id: ctx?.requestId });
      }
    },
    responseMeta: ({ errors, ctx }) => {
      if (!errors.some((e) => e.code === 'TOO_MANY_REQUESTS') || !ctx?.clientIp) return {};
      return { headers: { 'Retry-After': String(Math.max(1, Math.ceil(adminThrottle.blockedFor(ctx.clientIp) / 1000))) } };
    },
  }));

  app.use(fallbackHandler([...v3Routes, ...extraRoutes]));
  app.use(errorHandler(deps.logger));
  return app;
}

/** One page per error code, so every problem's `type` URL resolves (api/http/error-codes.ts). */
function mountErrorPages(app: express.Express): void {
  app.get('/docs/errors/:code', (req, res, next) => {
    const code = req.params.code;
    const entry = Object.hasOwn(ERROR_CODES, code) ? ERROR_CODES[code] : undefined;
    if (!entry) {
      return next(new ApiError({
        status: 404, code: 'not_found', title: 'Not Found',
        detail: `No error code '${code}' is documented.`,
        suggestion: 'Use the `code` of a problem document; its `type` member links to the right page.',
      }));
    }
    if (req.accepts(['html', 'json']) === 'json' || state(res).format === 'xml') {
      return void sendDocument(res, 200, { code, ...entry });
    }
    res.type('html').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${code}: ${escapeHtml(entry.title)}</title></head>
<body><main>
<h1><code>${code}</code></h1>
<p>HTTP ${entry.status} ${escapeHtml(entry.title)}</p>
<h2>Meaning</h2><p>${escapeHtml(entry.meaning)}</p>
<h2>What to do</h2><p>${escapeHtml(entry.suggestion)}</p>
<p>Every problem document carries a <code>request_id</code>; quote it when you contact support. <a href="/docs">API reference</a></p>
</main></body></html>`);
  });
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function mountDocs(app: express.Express): void {
  const require = createRequire(import.meta.url);
  const swaggerDir = dirname(require.resolve('swagger-ui-dist/package.json'));
  app.use('/docs/assets', express.static(swaggerDir, { index: false, maxAge: '1h' }));
  const script = "window.ui = SwaggerUIBundle({ url: '/v3/openapi.json', dom_id: '#docs', deepLinking: true, validatorUrl: null });";
  const csp = inlinePageCsp([script], { scriptsFromSelf: true });
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Business Platform API v3</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="docs"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>${script}</script>
</body></html>`;
  app.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', csp);
    res.type('html').send(page);
  });
}

/**
 * `/metrics` is for Prometheus: with METRICS_TOKEN set, only with that bearer token (compared in
 * constant time); without it, only from the same host (loopback), so a public port never shows it.
 */
function metricsAllowed(token: string | undefined, req: Request): boolean {
  if (token) {
    const presented = Buffer.from(/^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
    const expected = Buffer.from(token);
    return presented.length === expected.length && timingSafeEqual(presented, expected);
  }
  const ip = req.socket.remoteAddress ?? '';
  return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
}

function logRequest(deps: AppDeps, req: Request, res: Response): void {
  const st = state(res);
  const durationMs = Number(process.hrtime.bigint() - st.startedAt) / 1e6;
  const path = req.originalUrl.split('?')[0]!;
  // Route templates only (an unmatched path would make a label per URL).
  const route = st.route ?? (req.route?.path as string | undefined) ?? 'unmatched';
  const status = res.statusCode;
  httpRequests.inc({ method: req.method, route, status });
  httpDuration.observe({ method: req.method, route, status_class: `${Math.floor(status / 100)}xx` }, durationMs / 1000);
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
      problem: st.problem ?? null,
    });
  }
  if (deps.logger.enabled('info')) {
    deps.logger.info('request', {
      request_id: st.requestId, method: req.method, path, status: res.statusCode,
      duration_ms: Math.round(durationMs * 100) / 100, key_id: st.auth?.keyId,
    });
  }
}
