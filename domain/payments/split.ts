import type { FieldError } from '../../platform/errors.ts';
import { exponent } from '../money.ts';

/**
 * Marketplace split arithmetic, exact: every amount is a decimal read from its shortest JSON form
 * into bigints, never added as binary floats.
 *
 * Rule: platform_fee + the splits' amounts + the splits' percentages of total_amount must equal
 * total_amount exactly. Percentage parts are then rounded DOWN to the currency's minor unit and
 * what the rounding leaves over (less than one minor unit per percentage split) is added to the
 * platform's fee, so the transfers plus the fee always add up to the charge.
 */
export interface SplitPartInput {
  destination: string;
  amount?: number;
  percent?: number;
}

export interface SplitInput {
  total_amount: number;
  platform_fee: number;
  currency: string;
  splits: SplitPartInput[];
}

export interface SplitPlan {
  /** The charge, in minor units. */
  total: number;
  /** The platform's fee as asked, in minor units. */
  requestedFee: number;
  /** The platform's fee including the rounding remainder. */
  platformFee: number;
  roundingRemainder: number;
  transfers: { destination: string; amount: number }[];
}

interface Decimal {
  digits: bigint;
  scale: number;
}

function decimalOf(n: number): Decimal | null {
  if (!Number.isFinite(n)) return null;
  let text = String(n);
  if (/e/i.test(text)) text = n.toFixed(20).replace(/\.?0+$/, '');
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return null;
  const fraction = m[3] ?? '';
  return { digits: BigInt(`${m[2]}${fraction}`) * (m[1] ? -1n : 1n), scale: fraction.length };
}

/** Minor units when `n` has no more decimals than the currency allows; else a message. */
function exactMinor(n: number, currency: string): bigint | string {
  const d = decimalOf(n);
  if (!d) return 'expected a decimal amount';
  const exp = exponent(currency);
  if (d.scale > exp) {
    return exp === 0
      ? `${currency} has no minor unit: send a whole number`
      : `${currency} amounts have at most ${exp} decimal places`;
  }
  const minor = d.digits * 10n ** BigInt(exp - d.scale);
  if (minor > MAX_SPLIT_MINOR) return `must be at most ${formatScaled(MAX_SPLIT_MINOR, exp, exp)} ${currency} (${MAX_SPLIT_MINOR} minor units, the largest payment amount)`;
  return minor;
}

/** The same bound as a payment's `amount` (POST /v3/payments/process): 99,999,999,999 minor units. */
const MAX_SPLIT_MINOR = 99_999_999_999n;

const MAX_PERCENT_DECIMALS = 6;

export function planSplit(input: SplitInput): { plan: SplitPlan } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  const currency = input.currency;
  const total = exactMinor(input.total_amount, currency);
  if (typeof total === 'string') errors.push({ path: 'total_amount', message: total });
  else if (total <= 0n) errors.push({ path: 'total_amount', message: 'must be greater than 0' });
  const fee = exactMinor(input.platform_fee, currency);
  if (typeof fee === 'string') errors.push({ path: 'platform_fee', message: fee });
  else if (fee < 0n) errors.push({ path: 'platform_fee', message: 'must not be negative' });

  const parts: ({ kind: 'amount'; minor: bigint } | { kind: 'percent'; value: Decimal })[] = [];
  input.splits.forEach((s, i) => {
    const hasAmount = s.amount !== undefined;
    const hasPercent = s.percent !== undefined;
    if (hasAmount === hasPercent) {
      errors.push({ path: `splits.${i}`, message: 'give exactly one of amount or percent' });
      return;
    }
    if (hasAmount) {
      const minor = exactMinor(s.amount!, currency);
      if (typeof minor === 'string') errors.push({ path: `splits.${i}.amount`, message: minor });
      else if (minor <= 0n) errors.push({ path: `splits.${i}.amount`, message: 'must be greater than 0' });
      else parts.push({ kind: 'amount', minor });
    } else {
      const value = decimalOf(s.percent!);
      if (!value || value.scale > MAX_PERCENT_DECIMALS) errors.push({ path: `splits.${i}.percent`, message: `expected a percentage with at most ${MAX_PERCENT_DECIMALS} decimal places` });
      else if (value.digits <= 0n || value.digits > 100n * 10n ** BigInt(value.scale)) errors.push({ path: `splits.${i}.percent`, message: 'must be greater than 0 and at most 100' });
      else parts.push({ kind: 'percent', value });
    }
  });
  if (errors.length || typeof total !== 'bigint' || typeof fee !== 'bigint') return { errors };

  // Exact check in units of 1 / (10^P * 100) minor units.
  const P = BigInt(MAX_PERCENT_DECIMALS);
  const unit = 10n ** P * 100n;
  let sum = fee * unit;
  for (const part of parts) {
    sum += part.kind === 'amount' ? part.minor * unit : total * part.value.digits * 10n ** (P - BigInt(part.value.scale));
  }
  if (sum !== total * unit) {
    const exp = exponent(currency);
    const show = (scaled: bigint) => formatScaled(scaled, exp + MAX_PERCENT_DECIMALS + 2, exp);
    return {
      errors: [{
        path: 'splits',
        message: `the splits plus platform_fee come to ${show(sum)} ${currency}, but total_amount is ${show(total * unit)} ${currency}; they must add up exactly`,
      }],
    };
  }

  const transfers = input.splits.map((s, i) => {
    const part = parts[i]!;
    const minor = part.kind === 'amount' ? part.minor : (total * part.value.digits * 10n ** (P - BigInt(part.value.scale))) / unit;
    return { destination: s.destination, amount: minor };
  });
  const zero = transfers.findIndex((t) => t.amount <= 0n);
  if (zero >= 0) return { errors: [{ path: `splits.${zero}.percent`, message: `comes to less than one minor unit of ${currency}` }] };
  const paid = transfers.reduce((a, t) => a + t.amount, 0n);
  const platformFee = total - paid;
  return {
    plan: {
      total: Number(total),
      requestedFee: Number(fee),
      platformFee: Number(platformFee),
      roundingRemainder: Number(platformFee - fee),
      transfers: transfers.map((t) => ({ destination: t.destination, amount: Number(t.amount) })),
    },
  };
}

/** `scaled` has `scale` decimals; shows it with `keep` decimals (more only when not zero). */
function formatScaled(scaled: bigint, scale: number, keep: number): string {
  const negative = scaled < 0n;
  const abs = (negative ? -scaled : scaled).toString().padStart(scale + 1, '0');
  const whole = abs.slice(0, abs.length - scale);
  let frac = abs.slice(abs.length - scale).replace(/0+$/, '');
  if (frac.length < keep) frac = frac.padEnd(keep, '0');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}
