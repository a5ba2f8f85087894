import { divideHalfEven, exponent } from '../money.ts';

/**
 * The ERP area's arithmetic, pure and exact (integer minor units, bigints, half-even rounding):
 * tax extraction, payment terms, approval tiers and the project analytics formulas. docs/erp.md
 * states each formula; test/erp/ledger.test.ts checks them against hand-computed examples.
 */

export const PAYMENT_TERMS = ['due_on_receipt', 'net_15', 'net_30', 'net_60', 'eom', '2_10_net_30'] as const;
export type PaymentTerms = (typeof PAYMENT_TERMS)[number];

const DAY_MS = 86_400_000;

/** Number of decimals written in a JSON number's shortest form (`100.5` → 1, `1e-7` → 7). */
export function decimalsOf(value: number): number {
  const text = String(value);
  const exp = /e-(\d+)$/i.exec(text);
  if (exp) {
    const mantissa = text.slice(0, exp.index);
    return Number(exp[1]) + (mantissa.split('.')[1]?.length ?? 0);
  }
  if (/e\+/i.test(text)) return 0;
  return text.split('.')[1]?.length ?? 0;
}

/** A decimal major-unit amount as minor units; null when it carries more decimals than the currency has. */
export function amountToMinor(value: number, currency: string): number | null {
  const exp = exponent(currency);
  if (decimalsOf(value) > exp) return null;
  const text = value.toFixed(exp); // exact: at most `exp` decimals were written
  return Number(text.replace('.', ''));
}

/** Rate in ten-thousandths of a percent (19 → 190000, 7.25 → 72500). */
export function rateUnits(percent: string | number): bigint {
  const text = typeof percent === 'number' ? percent.toFixed(4) : percent;
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole!) * 10_000n + BigInt((fraction + '0000').slice(0, 4));
}

export interface TaxSplit {
  /** What the customer owes or the vendor is owed: net + tax. */
  gross: number;
  net: number;
  tax: number;
}

/**
 * Splits an amount into net and tax at `percent`. Tax-inclusive: tax = amount × r / (100 + r),
 * rounded half-even, and the remainder of the rounding stays on the net (revenue) line, so
 * net + tax = amount exactly (100.00 incl. 19 % → 84.03 + 15.97). Tax-exclusive: tax = amount ×
 * r / 100 rounded half-even, added on top.
 */
export function splitTax(amount: number, percent: string | number, inclusive: boolean): TaxSplit {
  const r = rateUnits(percent);
  const a = BigInt(amount);
  if (r === 0n) return { gross: amount, net: amount, tax: 0 };
  if (inclusive) {
    const tax = Number(divideHalfEven(a * r, 1_000_000n + r));
    return { gross: amount, net: amount - tax, tax };
  }
  const tax = Number(divideHalfEven(a * r, 1_000_000n));
  return { gross: amount + tax, net: amount, tax };
}

export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

export function endOfMonth(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).toISOString().slice(0, 10);
}

export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

export interface TermsDates {
  dueDate: string;
  discountDate: string | null;
  discountPercent: string | null;
}

/**
 * Due date (and early-payment discount) of a document dated `date`: `due_on_receipt` the same day,
 * `net_N` N days later, `eom` the last day of the document's month, `2_10_net_30` 30 days later
 * with 2 % off when paid within 10 days.
 */
export function termsDates(date: string, terms: PaymentTerms): TermsDates {
  switch (terms) {
    case 'due_on_receipt': return { dueDate: date, discountDate: null, discountPercent: null };
    case 'net_15': return { dueDate: addDays(date, 15), discountDate: null, discountPercent: null };
    case 'net_30': return { dueDate: addDays(date, 30), discountDate: null, discountPercent: null };
    case 'net_60': return { dueDate: addDays(date, 60), discountDate: null, discountPercent: null };
    case 'eom': return { dueDate: endOfMonth(date), discountDate: null, discountPercent: null };
    case '2_10_net_30': return { dueDate: addDays(date, 30), discountDate: addDays(date, 10), discountPercent: '2.00' };
  }
}

/** `amount × percent / 100`, half-even (the early-payment discount in minor units). */
export function percentOf(amount: number, percent: string): number {
  return Number(divideHalfEven(BigInt(amount) * rateUnits(percent), 1_000_000n));
}

/** The approvals an order of `baseTotal` (base-currency minor units) needs, in order. */
export function requiredApprovals(
  baseTotal: number, tiers: { singleFrom: number; dualFrom: number }, forced: boolean,
): ('procurement' | 'finance')[] {
  if (baseTotal >= tiers.dualFrom) return ['procurement', 'finance'];
  if (baseTotal >= tiers.singleFrom || forced) return ['procurement'];
  return [];
}

export interface ProjectFigures {
  budget: number;
  /** Net debits to expense accounts tagged with the project. */
  spent: number;
  /** Net credits to revenue accounts tagged with the project. */
  revenue: number;
  startDate: string;
  endDate: string;
  asOf: string;
  milestones: { weight: number; completed: boolean }[];
  status: string;
}

export interface ProjectAnalyticsFigures {
  remaining: number;
  marginPercent: number;
  projectedProfit: number;
  completionPercent: number;
}

/** `n / d × 100` with two decimals, half-even. */
function percent2(n: bigint, d: bigint): number {
  if (d === 0n) return 0;
  return Number(divideHalfEven(n * 10_000n, d)) / 100;
}

/**
 * The project analytics formulas (docs/erp.md):
 * - remaining = budget − spent (negative when over budget);
 * - margin_percent = (revenue − spent) / revenue × 100, two decimals (0 without revenue);
 * - elapsed = days from start_date to as_of, clamped to [1, duration], duration = end − start + 1 days;
 * - projected_profit: while the project runs (planned, in progress, on hold) revenue and cost are each
 *   extrapolated linearly from their daily rate over the elapsed days to the whole duration
 *   (x × duration / elapsed, half-even), and the profit is their difference; a completed or
 *   cancelled project's projection is its actual profit;
 * - completion_percent = completed milestones' weight / all milestones' weight × 100, else
 *   elapsed / duration × 100 (two decimals).
 */
export function projectAnalytics(f: ProjectFigures): ProjectAnalyticsFigures {
  const duration = daysBetween(f.startDate, f.endDate) + 1;
  const elapsed = Math.min(duration, Math.max(1, daysBetween(f.startDate, f.asOf) + 1));
  const profit = f.revenue - f.spent;
  const running = f.status === 'planned' || f.status === 'in_progress' || f.status === 'on_hold';
  const extrapolate = (x: number) => Number(divideHalfEven(BigInt(x) * BigInt(duration), BigInt(elapsed)));
  const projectedProfit = running ? extrapolate(f.revenue) - extrapolate(f.spent) : profit;
  const totalWeight = f.milestones.reduce((s, m) => s + m.weight, 0);
  const completionPercent = totalWeight > 0
    ? percent2(BigInt(f.milestones.filter((m) => m.completed).reduce((s, m) => s + m.weight, 0)), BigInt(totalWeight))
    : f.status === 'completed' ? 100 : daysBetween(f.startDate, f.asOf) < 0 ? 0 : percent2(BigInt(elapsed), BigInt(duration));
  return {
    remaining: f.budget - f.spent,
    marginPercent: f.revenue > 0 ? percent2(BigInt(profit), BigInt(f.revenue)) : 0,
    projectedProfit,
    completionPercent,
  };
}

/** Whether a bill matches the received value within `tolerancePercent` (three-way match). */
export function withinTolerance(billed: number, received: number, tolerancePercent: string): boolean {
  const allowed = percentOf(received, tolerancePercent);
  return Math.abs(billed - received) <= allowed;
}
