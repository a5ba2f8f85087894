import type { Request } from 'express';
import { ApiError } from '../../platform/errors.ts';
import { payloadTooLarge } from './problems.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

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

/** Parses a JSON body; an empty body is `{}`. Malformed JSON is a 400 that says where it broke. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return {};
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
