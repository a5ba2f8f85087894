import Negotiator from 'negotiator';
import { ApiError } from '../../platform/errors.ts';
import type { Format } from './context.ts';

/**
 * What the API can answer, in order of preference when the client does not mind: JSON first. The
 * charset parameter is part of each so that `Accept: application/json; charset=utf-8` matches.
 */
const AVAILABLE = [
  'application/json; charset=utf-8',
  'application/xml; charset=utf-8',
  'text/xml; charset=utf-8',
  'application/problem+json; charset=utf-8',
  'application/problem+xml; charset=utf-8',
];
const FORMAT: Record<string, Format> = {
  'application/json': 'json', 'application/problem+json': 'json',
  'application/xml': 'xml', 'text/xml': 'xml', 'application/problem+xml': 'xml',
};

const CACHE_SIZE = 256;
const cache = new Map<string, Format | null>();

/**
 * Picks JSON or XML from `Accept` with RFC 9110 rules (q-values, the most specific range deciding:
 * `application/json;q=0, *\/*` is XML, `text/*` is XML), via `negotiator`; null when neither is
 * acceptable (406). No header, or an empty one, means JSON. Answers are cached per header value
 * (at most CACHE_SIZE, the oldest dropped first), since clients send the same few headers.
 */
export function negotiate(accept: string | undefined): Format | null {
  if (!accept) return 'json';
  const known = cache.get(accept);
  if (known !== undefined) return known;
  const best = new Negotiator({ headers: { accept } }).mediaTypes(AVAILABLE)[0];
  const format = best ? FORMAT[best.split(';')[0]!]! : null;
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(accept, format);
  return format;
}

/** Whether `accept` admits one of `types` (a route's binary answer: application/pdf, audio/wav …). */
export function acceptsAny(accept: string | undefined, types: readonly string[]): boolean {
  if (!accept || types.length === 0) return !accept;
  return new Negotiator({ headers: { accept } }).mediaTypes([...types]).length > 0;
}

/** The one of `types` that `accept` prefers (q-values, then specificity, then the order given); none acceptable: undefined. */
export function prefersMediaType(accept: string | undefined, types: readonly string[]): string | undefined {
  if (!accept) return types[0];
  return new Negotiator({ headers: { accept } }).mediaTypes([...types])[0];
}

/** 406: nothing this server (or this route) answers is acceptable. */
export function notAcceptable(accept: string | undefined, answers = 'Accept: application/json (the default) or Accept: application/xml'): ApiError {
  return new ApiError({
    status: 406, code: 'not_acceptable', title: 'Not Acceptable',
    detail: `Cannot answer with ${accept}.`,
    suggestion: `Send ${answers}.`,
  });
}
