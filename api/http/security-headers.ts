import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';

/**
 * Security headers on every response (what `helmet` sets by default, written directly: nine
 * constant headers do not need a dependency, and this runs on the hot path). The API serves only
 * JSON and XML, so its Content-Security-Policy allows nothing at all; /docs gets its own (docsCsp).
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
 * The policy of the /docs page: swagger-ui's script and stylesheet from /docs/assets, its one
 * inline script by hash, inline styles (swagger-ui sets them), images and fonts from itself or
 * data: URIs, and fetches to this origin only (the OpenAPI document, "Try it out").
 */
export function docsCsp(inlineScript: string): string {
  const hash = createHash('sha256').update(inlineScript).digest('base64');
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}
