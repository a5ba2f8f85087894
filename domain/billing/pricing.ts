import type { UsagePricing } from '../../workflows/billing/shared.ts';
import { divideHalfEven } from '../money.ts';

/**
 * Invoice arithmetic, exact: quantities and unit amounts are decimal strings handled as scaled
 * bigints, taxes are a percentage of integer minor units, every result is rounded half-even to
 * the currency's minor unit (amounts are already minor units, so that is the integer).
 */

const DECIMAL = /^(\d+)(?:\.(\d{1,6}))?$/;
const SCALE = 1_000_000n;

/** "12.5" → 12_500_000n (micro-units); at most 6 decimals. */
export function toMicro(value: string): bigint {
  const m = DECIMAL.exec(value.trim());
  if (!m) throw new RangeError(`not a non-negative decimal with at most 6 places: ${JSON.stringify(value)}`);
  return BigInt(m[1]!) * SCALE + BigInt((m[2] ?? '').padEnd(6, '0'));
}

export function fromMicro(value: bigint): string {
  const whole = value / SCALE;
  const frac = (value % SCALE).toString().padStart(6, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** quantity × unit amount (both decimal strings), as integer minor units rounded half-even. */
export function extend(quantity: string, unitAmount: string): number {
  return Number(divideHalfEven(toMicro(quantity) * toMicro(unitAmount), SCALE * SCALE));
}

export interface UsageLine {
  description: string;
  quantity: string;
  unitAmount: string;
  amount: number;
}

/**
 * The usage lines of a period: one line at the unit amount, or with graduated tiers one line per
 * tier reached (units up to `up_to` at that tier's price, the rest in the next tier).
 */
export function usageLines(pricing: UsagePricing, total: string): UsageLine[] {
  const qty = toMicro(total);
  if (!pricing.tiers?.length) {
    return [{ description: `${pricing.metric_name} × ${fromMicro(qty)}`, quantity: fromMicro(qty), unitAmount: pricing.unit_amount, amount: extend(fromMicro(qty), pricing.unit_amount) }];
  }
  const lines: UsageLine[] = [];
  let done = 0n;
  for (const [i, tier] of pricing.tiers.entries()) {
    if (qty <= done) break;
    const upper = tier.up_to === null ? qty : BigInt(tier.up_to) * SCALE;
    const inTier = (upper < qty ? upper : qty) - done;
    if (inTier <= 0n) continue;
    const from = fromMicro(done);
    done += inTier;
    lines.push({
      description: `${pricing.metric_name} tier ${i + 1} (${from}–${tier.up_to ?? '∞'})`,
      quantity: fromMicro(inTier), unitAmount: tier.unit_amount, amount: extend(fromMicro(inTier), tier.unit_amount),
    });
  }
  return lines;
}

/**
 * Tax on `amount` minor units at `percentage` (a decimal string such as "19.25"), rounded
 * half-even to the minor unit: 1050 at 5 % → 52 (52.5 rounds to even), 1150 at 5 % → 58.
 */
export function taxOn(amount: number, percentage: string): number {
  return Number(divideHalfEven(BigInt(amount) * toMicro(percentage), 100n * SCALE));
}
