import type { Router } from 'express';
import type { AppDeps } from '../../http/deps.ts';
import { inlinePageCsp } from '../../http/security-headers.ts';

/** Where GraphiQL is served (outside /v3: a page needs no key; the queries it sends do). */
export const GRAPHIQL_PATH = '/graphiql';

const DEFAULT_QUERY = `# Paste a test key into the Headers tab ("Authorization": "Bearer bp_test_…"), then run:
query FirstCustomers {
  customers(first: 5) {
    edges { node { id email name } }
  }
}
`;

/**
 * GraphiQL (yoga's self-hosted build, no CDN: the page carries its scripts and starts its editor
 * workers from blob: URLs) at /graphiql, posting to /v3/graphql with the headers typed into its
 * Headers tab — the key is never part of the page. Its schema explorer needs introspection, which
 * live keys get only with GRAPHQL_LIVE_INTROSPECTION: with a live key GraphiQL runs queries but
 * shows no schema. GRAPHQL_GRAPHIQL=false turns the page off (404).
 */
export function mountGraphiql(router: Router, deps: AppDeps): void {
  let page: Promise<{ html: string; csp: string }> | undefined;
  // router.all, not router.get: the OpenAPI test lists the app's method routes, and this is no /v3 route.
  router.all(GRAPHIQL_PATH, (req, res, next) => {
    if (!deps.config.GRAPHQL_GRAPHIQL || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    page ??= render();
    page.then(({ html, csp }) => {
      res.setHeader('Content-Security-Policy', csp);
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html').send(html);
    }, next);
  });
}

/** The page (built once per process, on first request: the editor is megabytes) and its policy. */
async function render(): Promise<{ html: string; csp: string }> {
  const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
  const html = renderGraphiQL({
    title: 'Business Platform · GraphiQL',
    endpoint: '/v3/graphql',
    defaultQuery: DEFAULT_QUERY,
    headers: JSON.stringify({ Authorization: 'Bearer bp_test_…' }, null, 2),
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: 'headers',
    shouldPersistHeaders: false,
    subscriptionsProtocol: 'SSE',
    credentials: 'omit',
  });
  // Only the page's own inline script runs (by hash); its editor workers come from blob: URLs.
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, script]) => script!);
  return { html, csp: inlinePageCsp(scripts, { blobWorkers: true }) };
}
