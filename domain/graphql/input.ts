import type { z } from 'zod';
import { validationFailed, type FieldError } from '../../platform/errors.ts';

/**
 * Validates a mutation's input (or a list's filters) with the REST schema for the same request, and
 * reports every bad field at once as `validation_failed` with the fields' paths (prefixed with the
 * argument's name), as REST's 422 does.
 */
export function validInput<S extends z.ZodType>(schema: S, value: unknown, argument?: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors: FieldError[] = result.error.issues.flatMap((issue) => {
    const base = [argument, ...issue.path.map(String)].filter(Boolean).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ path: base ? `${base}.${k}` : k, message: 'unknown field; remove it or check its spelling against the API reference' }));
    }
    return [{ path: base || '(input)', message: issue.message }];
  });
  throw validationFailed(errors);
}
