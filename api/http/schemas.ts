import { z } from 'zod';
import { SUPPORTED_CURRENCIES, isSupportedCurrency } from '../../domain/money.ts';
import { isCalendarDate, isIsoTimestamp } from '../../platform/dates.ts';

/** Schema pieces every area reuses, so one rule has one wording everywhere. */

const DMY = /^(\d{2})\/(\d{2})\/(\d{4})$/;

function isoDateMessage(value: unknown): string {
  const m = typeof value === 'string' ? DMY.exec(value) : null;
  return m
    ? `dates use ISO 8601 YYYY-MM-DD, not the old DD/MM/YYYY form: send ${m[3]}-${m[2]}-${m[1]}`
    : typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value)
      ? `${value} is not a calendar date (no such day in that month); send a real date as YYYY-MM-DD`
      : 'expected a date as YYYY-MM-DD';
}

export const isoDate = z
  .string({ error: (iss) => isoDateMessage(iss.input) })
  .refine(isCalendarDate, { error: (iss) => isoDateMessage(iss.input) })
  .meta({ format: 'date', example: '2025-03-14' });

/** A timestamp (ISO 8601 with zone) or a date; a date means its start (or, for `_lte`, its end) in UTC. */
export function dateOrTimestamp(boundary: 'start' | 'end') {
  return z
    .string()
    .refine((v) => isIsoTimestamp(v) || isCalendarDate(v), {
      error: (iss) => (typeof iss.input === 'string' && (DMY.test(iss.input) || /^\d{4}-\d{2}-\d{2}$/.test(iss.input))
        ? isoDateMessage(iss.input)
        : 'expected YYYY-MM-DD or an ISO 8601 timestamp such as 2025-03-14T09:30:00Z (a real date and time)'),
    })
    .transform((v) => {
      if (v.includes('T')) return new Date(v);
      const start = new Date(`${v}T00:00:00.000Z`);
      return boundary === 'start' ? start : new Date(start.getTime() + 86_400_000 - 1);
    })
    .refine((d) => !Number.isNaN(d.getTime()), 'not a real date');
}

export const metadata = z
  .record(z.string().min(1).max(40, 'metadata keys are at most 40 characters'), z.string().max(500, 'metadata values are at most 500 characters'))
  .refine((m) => Object.keys(m).length <= 50, 'metadata holds at most 50 keys')
  .describe('Free key/value pairs: at most 50 keys, keys up to 40 characters, values up to 500.');

/** A comma-separated query value as a list: `?status=a,b`. */
export function csv<T extends z.ZodType<unknown, string>>(item: T) {
  return z
    .string()
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(item).min(1));
}

export const currency = z
  .string()
  .transform((c) => c.trim().toUpperCase())
  .refine(isSupportedCurrency, { message: `expected an ISO 4217 currency code we support, e.g. USD, EUR, JPY (supported: ${SUPPORTED_CURRENCIES.join(', ')})` })
  .meta({ example: 'USD' });

// ---- Integers within their column's range (API-CONVENTIONS "Input limits") ------------------
// zod's `.int()` already refuses anything that is not a safe integer (|n| > 2^53 - 1), so no integer
// field can lose precision; these bound each kind by the PostgreSQL column that stores it.

/** Largest value of a PostgreSQL `integer` (int4) column. */
export const INT32_MAX = 2_147_483_647;
/** Largest value of a PostgreSQL `smallint` column. */
export const INT16_MAX = 32_767;
/** Largest amount in minor units: fits a `bigint` column and stays exact as a JavaScript number. */
export const MAX_MINOR_UNITS = Number.MAX_SAFE_INTEGER;

const tooBig = (max: number, what: string) => `must be at most ${max} (${what})`;

/** An integer stored in an `integer` (int4) column: 0 to 2147483647 unless narrowed further. */
export function int32(opts: { min?: number; max?: number; message?: string } = {}) {
  const max = Math.min(opts.max ?? INT32_MAX, INT32_MAX);
  return z.number()
    .int(opts.message ?? 'expected a whole number')
    .min(opts.min ?? 0, `must be at least ${opts.min ?? 0}`)
    .max(max, tooBig(max, max === INT32_MAX ? 'the largest 32-bit integer' : 'the documented maximum'));
}

/** A count of things (units, items, days): a non-negative int4. */
export const count = (max = INT32_MAX, message?: string) => int32({ min: 0, max, message });

/** Integer minor units of a currency (cents; yen; fils), at most 2^53 - 1 (bigint columns). */
export const minorUnits = z.number()
  .int('amounts are integers in minor units (e.g. cents)')
  .nonnegative('amounts are not negative')
  .max(MAX_MINOR_UNITS, tooBig(MAX_MINOR_UNITS, '2^53 - 1, the largest exact integer'));

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Any JSON value (what `z.json()` accepts), one named component in the OpenAPI document. */
export const jsonValue: z.ZodType<Json> = z
  .lazy(() => z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(jsonValue), z.record(z.string(), jsonValue)]))
  .meta({ id: 'JsonValue' });
