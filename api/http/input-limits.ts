import type { z } from 'zod';
import type { FieldError } from '../../platform/errors.ts';

/**
 * Input limits that hold on every operation, checked once by the dispatcher before the route's
 * schemas (API-CONVENTIONS "Input limits"): no string in a body, query or path parameter (nor any
 * key of a body object) may contain NUL or another C0 control character other than tab, LF and CR.
 * PostgreSQL refuses NUL in text, XML 1.0 cannot carry any of them, and no field has a use for them.
 */
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
// eslint-disable-next-line no-control-regex
const FORBIDDEN_ALL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;

const NAMES = ['NUL', 'SOH', 'STX', 'ETX', 'EOT', 'ENQ', 'ACK', 'BEL', 'BS', 'HT', 'LF', 'VT', 'FF', 'CR', 'SO', 'SI',
  'DLE', 'DC1', 'DC2', 'DC3', 'DC4', 'NAK', 'SYN', 'ETB', 'CAN', 'EM', 'SUB', 'ESC', 'FS', 'GS', 'RS', 'US'];

function describe(text: string): string {
  const at = text.search(FORBIDDEN);
  const code = text.charCodeAt(at);
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')} (${NAMES[code]}) at position ${at}`;
}

/** A key as it appears in an error path: control characters shown as `\uXXXX`. */
function printable(key: string): string {
  return key.replace(FORBIDDEN_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const REMOVE = 'remove it: control characters other than tab, line feed and carriage return are not accepted';

/**
 * Every string (and object key) in `value` that holds a forbidden control character, as field
 * errors with dotted paths under `base` (`line_items.0.sku`). Depth is bounded by the JSON depth
 * limit, which the body has already passed.
 */
export function controlCharacterErrors(value: unknown, base: string, out: FieldError[] = []): FieldError[] {
  if (typeof value === 'string') {
    if (FORBIDDEN.test(value)) out.push({ path: base || '(body)', message: `contains the control character ${describe(value)}; ${REMOVE}` });
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) controlCharacterErrors(value[i], base ? `${base}.${i}` : String(i), out);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const path = base ? `${base}.${printable(k)}` : printable(k);
      if (FORBIDDEN.test(k)) out.push({ path, message: `the field name contains the control character ${describe(k)}; ${REMOVE}` });
      controlCharacterErrors(v, path, out);
    }
  }
  return out;
}

/**
 * The safety net for integers: zod's `.int()` refuses any number past ±(2^53 - 1), where JSON
 * numbers stop being exact, even when a field names no bound of its own. Its issue then says so,
 * naming the bound, whatever message the field gave for "not an integer".
 */
export function unsafeIntegerMessage(issue: z.core.$ZodIssue): string | undefined {
  if ((issue.code === 'too_big' || issue.code === 'too_small') && issue.origin === 'int') {
    const bound = issue.code === 'too_big' ? `at most ${Number.MAX_SAFE_INTEGER}` : `at least ${Number.MIN_SAFE_INTEGER}`;
    return `must be ${bound} (2^53 - 1, the largest integer a JSON number carries exactly)`;
  }
  return undefined;
}
