import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';

/**
 * Security headers on every response (what `helmet` sets by default, written directly: nine
 * constant headers do not need a dependency, and this runs on the hot path). The API serves only
 * JSON and XML, so its Content-Security-Policy allows nothing at all; /docs and /graphiql get their own (inlinePageCsp).
 */
const HEADERS: [string, string][] = [
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Origin-Agent-Cluster', '?1'],
  ['X-DNS-Prefetch-Control', 'off'],
  ['X-Permitted-Cross-Domain-Policies', 'none'],
];

/** HSTS: a year, subdomains included. Sent on HTTPS requests only (directly or behind a trusted proxy); browsers ignore it over HTTP. */
export const HSTS = 'max-age=31536000; includeSubDomains';

export function setSecurityHeaders(req: Request, res: Response): void {
  for (const [name, value] of HEADERS) res.setHeader(name, value);
  if (req.secure) res.setHeader('Strict-Transport-Security', HSTS);
}

/**
 * The policy of a page the API renders with inline scripts (/docs, /graphiql): those scripts by
 * hash and, with `scriptsFromSelf`, scripts from this origin (swagger-ui's bundle under /docs/assets);
 * with `blobWorkers`, workers started from blob: URLs (GraphiQL's editor); inline styles (both set
 * them), images and fonts from itself or data: URIs, and fetches to this origin only.
 */
export function inlinePageCsp(inlineScripts: readonly string[], opts: { scriptsFromSelf?: boolean; blobWorkers?: boolean } = {}): string {
  const hashes = inlineScripts.map((script) => `'sha256-${createHash('sha256').update(script).digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src ${[...(opts.scriptsFromSelf ? ["'self'"] : []), ...hashes].join(' ')}`,
    ...(opts.blobWorkers ? ['worker-src blob:'] : []),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}
