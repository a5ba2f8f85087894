import { z } from 'zod';

/** Schema pieces every area reuses, so one rule has one wording everywhere. */

const DMY = /^(\d{2})\/(\d{2})\/(\d{4})$/;

function isoDateMessage(value: unknown): string {
  const m = typeof value === 'string' ? DMY.exec(value) : null;
  return m
    ? `dates use ISO 8601 YYYY-MM-DD, not the old DD/MM/YYYY form: send ${m[3]}-${m[2]}-${m[1]}`
    : 'expected a date as YYYY-MM-DD';
}

export const isoDate = z
  .string({ error: (iss) => isoDateMessage(iss.input) })
  .refine((v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`)), {
    error: (iss) => isoDateMessage(iss.input),
  })
  .meta({ format: 'date', example: '2025-03-14' });

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** A timestamp (ISO 8601 with zone) or a date; a date means its start (or, for `_lte`, its end) in UTC. */
export function dateOrTimestamp(boundary: 'start' | 'end') {
  return z
    .string()
    .refine((v) => ISO_TIMESTAMP.test(v) || /^\d{4}-\d{2}-\d{2}$/.test(v), {
      error: (iss) => (typeof iss.input === 'string' && DMY.test(iss.input) ? isoDateMessage(iss.input) : 'expected YYYY-MM-DD or an ISO 8601 timestamp such as 2025-03-14T09:30:00Z'),
    })
    .transform((v) => {
      if (ISO_TIMESTAMP.test(v)) return new Date(v);
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

/** Object-kind names in responses. */
export const objectKind = <T extends string>(kind: T) => z.literal(kind);
