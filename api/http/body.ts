import type { Request } from 'express';
import { ApiError } from '../../platform/errors.ts';
import { payloadTooLarge } from './problems.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Deepest nesting of arrays and objects a JSON body may have (API-CONVENTIONS "Input limits"). */
export const MAX_JSON_DEPTH = 64;

export function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

export function isJsonContentType(req: Request): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** Reads the raw body, refusing more than `limit` bytes (413) before or while it arrives. */
export async function readRawBody(req: Request, limit: number): Promise<Buffer> {
  if (!hasBody(req)) return Buffer.alloc(0);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw payloadTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const OPEN_BRACE = 0x7b, OPEN_BRACKET = 0x5b, CLOSE_BRACE = 0x7d, CLOSE_BRACKET = 0x5d, QUOTE = 0x22, BACKSLASH = 0x5c;

/**
 * The deepest nesting of `{`/`[` in raw JSON, counted outside strings, stopping as soon as it
 * passes `limit`; one pass over the bytes, no recursion (so a hostile body cannot overflow the
 * stack before JSON.parse even starts). Malformed input is left to JSON.parse to report.
 */
export function jsonDepthExceeds(raw: Buffer, limit: number): boolean {
  // A document nested deeper than `limit` needs at least 2 * (limit + 1) bytes.
  if (raw.length < 2 * (limit + 1)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * Parses a JSON body; an empty body is `{}`. Malformed JSON is a 400 that says where it broke;
 * nesting deeper than MAX_JSON_DEPTH is a 400 `json_too_deep`, checked before parsing.
 */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return {};
  if (jsonDepthExceeds(raw, MAX_JSON_DEPTH)) {
    throw new ApiError({
      status: 400, code: 'json_too_deep', title: 'Bad Request',
      detail: `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`,
      suggestion: `Flatten the document: at most ${MAX_JSON_DEPTH} levels of nested objects and arrays are accepted.`,
    });
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new ApiError({
      status: 400, code: 'invalid_json', title: 'Bad Request',
      detail: `The request body is not valid JSON: ${(err as Error).message}.`,
      suggestion: 'Send a JSON document (check quotes, commas and brackets) with Content-Type: application/json.',
    });
  }
}
