import type { EntityManager } from '@mikro-orm/postgresql';
import { validationFailed } from '../../platform/errors.ts';

/**
 * Reporting windows: whole local calendar days in an IANA time zone. The instants are cut by
 * PostgreSQL (`date::timestamp at time zone tz`), which knows every DST rule, so a 23- or 25-hour
 * day holds exactly what happened on that local date (the v3.2.1 sales-summary fix, shared by
 * every analytics figure and by GET /v3/reports/sales-summary).
 */

export const PERIODS = ['7d', '30d', '90d', '12m', 'custom'] as const;
export type PeriodName = (typeof PERIODS)[number];
export const GRANULARITIES = ['day', 'week', 'month'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** A window of local dates, both inclusive. */
export interface DateWindow {
  start: string;
  end: string;
  timezone: string;
}

const DAY_MS = 86_400_000;

export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

export function daysBetween(start: string, end: string): number {
  return Math.round((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS);
}

export function addMonths(date: string, months: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d.toISOString().slice(0, 10);
}

/** Today's date in `timezone`. */
export function localToday(timezone: string, now: Date): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((p) => p.type === t)!.value;
  return `${get('year')}-${get('month')}-${get('day')}`;
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Zones PostgreSQL confirmed (its list is fixed for the server's life; reading it costs a scan). */
const knownZones = new Set<string>(['UTC']);

/** Refuses a zone PostgreSQL does not know (422 naming `path`). */
export async function assertTimeZone(em: EntityManager, timezone: string, path = 'timezone'): Promise<void> {
  if (knownZones.has(timezone)) return;
  const zone = await em.execute<{ ok: boolean }[]>('select exists (select 1 from pg_timezone_names where name = ?) as ok', [timezone]);
  if (!zone[0]?.ok) throw validationFailed([{ path, message: `unknown IANA time zone '${timezone}'; use a name such as Europe/Berlin or America/New_York` }]);
  if (knownZones.size < 1000) knownZones.add(timezone);
}

/**
 * The window a `period` names, ending today (local) inclusive: `7d` is today and the 6 days before;
 * `12m` starts the day after the same date a year ago. `custom` takes `start` and `end`.
 */
export function resolvePeriod(
  input: { period: PeriodName; start?: string | undefined; end?: string | undefined; timezone: string },
  now: Date,
  maxDays = 366 * 5,
): DateWindow {
  if (input.period === 'custom') {
    const errors = [];
    if (!input.start) errors.push({ path: 'start', message: 'period=custom needs start (YYYY-MM-DD)' });
    if (!input.end) errors.push({ path: 'end', message: 'period=custom needs end (YYYY-MM-DD)' });
    if (errors.length) throw validationFailed(errors);
    if (input.start! > input.end!) throw validationFailed([{ path: 'end', message: 'end must not be before start' }]);
    if (daysBetween(input.start!, input.end!) + 1 > maxDays) throw validationFailed([{ path: 'end', message: `a window spans at most ${maxDays} days` }]);
    return { start: input.start!, end: input.end!, timezone: input.timezone };
  }
  if (input.start || input.end) {
    throw validationFailed([{ path: input.start ? 'start' : 'end', message: 'start and end go with period=custom only; drop them or send period=custom' }]);
  }
  const end = localToday(input.timezone, now);
  const start = input.period === '12m' ? addDays(addMonths(end, -12), 1) : addDays(end, -(Number(input.period.slice(0, -1)) - 1));
  return { start, end, timezone: input.timezone };
}

/** The window of equal length just before `w` (for growth and KPI changes). */
export function previousWindow(w: DateWindow): DateWindow {
  const length = daysBetween(w.start, w.end) + 1;
  return { start: addDays(w.start, -length), end: addDays(w.start, -1), timezone: w.timezone };
}

export function windowDays(w: DateWindow): number {
  return daysBetween(w.start, w.end) + 1;
}

/** The first local date of the bucket `date` falls in (weeks start on Monday, ISO 8601). */
export function bucketStart(date: string, granularity: Granularity): string {
  if (granularity === 'day') return date;
  if (granularity === 'month') return `${date.slice(0, 8)}01`;
  const dow = (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
  return addDays(date, -dow);
}

/** Every bucket start from `w.start` to `w.end` (the first may start before the window). */
export function bucketStarts(w: { start: string; end: string }, granularity: Granularity): string[] {
  const out: string[] = [];
  let d = bucketStart(w.start, granularity);
  while (d <= w.end) {
    out.push(d);
    d = granularity === 'day' ? addDays(d, 1) : granularity === 'week' ? addDays(d, 7) : addMonths(d, 1);
  }
  return out;
}
