import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { TLSSocket } from 'node:tls';

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
  if (isSecure(req)) res.setHeader('Strict-Transport-Security', HSTS);
}

/**
 * `req.secure` as Express decides it, without its cost where the answer is already known: with no
 * X-Forwarded-Proto header, only a TLS socket is secure; with one, Express judges whether the peer
 * is a trusted proxy (which parses its address, on every request otherwise).
 */
function isSecure(req: Request): boolean {
  return req.headers['x-forwarded-proto'] === undefined ? (req.socket as TLSSocket).encrypted === true : req.secure;
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
