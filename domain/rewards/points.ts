/**
 * The program's rules as pure arithmetic: credited points, order earnings, tiers and calendar
 * months. Exact: multipliers are decimals with at most 4 places, scaled to integers and
 * multiplied as bigints, then floored once (never a binary float in the arithmetic).
 */

/** Points per one major unit of `currency` (e.g. 1 point per USD 1.00). */
export interface EarnRule {
  currency: string;
  points_per_unit: number;
}

export interface TierRule {
  name: string;
  /** Points earned in the rolling 12 months needed to reach the tier. */
  threshold: number;
  /** Applied to every grant credited while the customer is in the tier. */
  earn_multiplier: number;
}

export const DEFAULT_TIERS: readonly TierRule[] = [
  { name: 'bronze', threshold: 0, earn_multiplier: 1 },
  { name: 'silver', threshold: 1_000, earn_multiplier: 1.25 },
  { name: 'gold', threshold: 5_000, earn_multiplier: 1.5 },
  { name: 'platinum', threshold: 20_000, earn_multiplier: 2 },
];
export const DEFAULT_EARN_RULES: readonly EarnRule[] = [
  { currency: 'USD', points_per_unit: 1 },
  { currency: 'EUR', points_per_unit: 1 },
  { currency: 'GBP', points_per_unit: 1 },
];
export const DEFAULT_RETURN_WINDOW_DAYS = 14;
export const DEFAULT_EXPIRY_MONTHS = 12;
/** The largest `points` one award may carry. */
export const MAX_AWARD_POINTS = 10_000_000;

const SCALE = 10_000n;

/** A decimal with at most 4 places, as an integer of ten-thousandths. */
export function scaled(value: number | string): bigint {
  const text = typeof value === 'number' ? value.toFixed(4) : value;
  const [whole = '0', frac = ''] = text.split('.');
  return BigInt(whole) * SCALE + BigInt((frac + '0000').slice(0, 4));
}

/** True when `value` has at most `places` decimal places. */
export function hasAtMostDecimals(value: number, places: number): boolean {
  return Number.isFinite(value) && Math.abs(Math.round(value * 10 ** places) - value * 10 ** places) < 1e-6;
}

/** floor(points × multiplier × tier multiplier). */
export function creditedPoints(points: number, multiplier: number | string, tierMultiplier: number | string): number {
  return Number((BigInt(points) * scaled(multiplier) * scaled(tierMultiplier)) / (SCALE * SCALE));
}

/** floor(amount in major units × points per unit): what an order of `amountMinor` earns before multipliers. */
export function orderPoints(amountMinor: number, currencyExponent: number, pointsPerUnit: number): number {
  return Number((BigInt(amountMinor) * scaled(pointsPerUnit)) / (10n ** BigInt(currencyExponent) * SCALE));
}

/** floor(points × part / whole): the share of an order's points a partial refund reverses. */
export function proportionalPoints(points: number, part: number, whole: number): number {
  if (whole <= 0) return points;
  return Number((BigInt(points) * BigInt(Math.min(part, whole))) / BigInt(whole));
}

/** Tiers lowest first. */
export function sortedTiers(tiers: readonly TierRule[]): TierRule[] {
  return [...tiers].sort((a, b) => a.threshold - b.threshold);
}

/** The highest tier whose threshold `earned` reaches. */
export function tierFor(tiers: readonly TierRule[], earned: number): TierRule {
  const sorted = sortedTiers(tiers);
  let found = sorted[0]!;
  for (const t of sorted) if (earned >= t.threshold) found = t;
  return found;
}

/** The tier named `name`, or (renamed away since) the lowest. */
export function tierNamed(tiers: readonly TierRule[], name: string): TierRule {
  return tiers.find((t) => t.name === name) ?? sortedTiers(tiers)[0]!;
}

export function tierIndex(tiers: readonly TierRule[], name: string): number {
  return sortedTiers(tiers).findIndex((t) => t.name === name);
}

/** `date` plus `months` calendar months in UTC, the day clamped to the month's last (Jan 31 + 1 → Feb 28/29). */
export function addMonths(date: Date, months: number): Date {
  const d = new Date(date.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d;
}

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * 86_400_000);
}

/** A timestamptz as the ORM's pg pool returns it (text) or as a Date: a Date. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
