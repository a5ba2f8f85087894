import type { Request } from 'express';
import type { z } from 'zod';
import { jsonDepthExceeds, isJsonContentType, MAX_JSON_DEPTH, readRawBody } from '../../http/body.ts';
import { controlCharacterErrors } from '../../http/input-limits.ts';
import { ApiError, validationFailed } from '../../../platform/errors.ts';

/** Sign-in and session bodies are a few short fields: anything past this is not one. */
export const SMALL_BODY_LIMIT = 16 * 1024;

/**
 * Reads a JSON body under the API's input limits (size, nesting, control characters) and parses
 * it with `schema`; every refusal is a 4xx problem naming the field. The pages skip the API's own
 * body checks (they also take forms), so the JSON endpoints among them call this.
 */
export async function readJson<T extends z.ZodType>(req: Request, schema: T): Promise<z.output<T>> {
  if (!isJsonContentType(req)) {
    throw new ApiError({
      status: 415, code: 'unsupported_media_type', title: 'Unsupported Media Type',
      detail: `The body must be JSON; got ${req.headers['content-type'] ?? 'no Content-Type'}.`,
      suggestion: 'Send the body as JSON with the header Content-Type: application/json.',
    });
  }
  const raw = await readRawBody(req, SMALL_BODY_LIMIT);
  if (jsonDepthExceeds(raw, MAX_JSON_DEPTH)) {
    throw new ApiError({
      status: 400, code: 'json_too_deep', title: 'Bad Request',
      detail: `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`, suggestion: 'Send a flat JSON object.',
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8') || 'null');
  } catch {
    throw new ApiError({
      status: 400, code: 'invalid_json', title: 'Bad Request', detail: 'The body is not valid JSON.',
      suggestion: 'Send a well-formed JSON object.',
    });
  }
  const control = controlCharacterErrors(value, '');
  if (control.length) throw validationFailed(control);
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw validationFailed(parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message })));
  }
  return parsed.data;
}
