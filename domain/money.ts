/**
 * Money, in one place for every area. Amounts are integer minor units of their currency
 * (cents; yen have none; dinars have three). Decimal major-unit values are handled as strings or
 * bigints, never binary floats, and rounded half-even (banker's rounding) to the currency's exponent.
 */

/** ISO 4217 minor-unit exponents that differ from 2. */
const EXPONENT_EXCEPTIONS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0,
  VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

/** The currencies the platform accepts (ISO 4217, upper case). */
export const SUPPORTED_CURRENCIES = [
  'AED', 'AUD', 'BHD', 'BRL', 'CAD', 'CHF', 'CLP', 'CNY', 'CZK', 'DKK', 'EUR', 'GBP', 'HKD', 'HUF',
  'IDR', 'ILS', 'INR', 'ISK', 'JOD', 'JPY', 'KRW', 'KWD', 'MXN', 'MYR', 'NOK', 'NZD', 'OMR', 'PHP',
  'PLN', 'RON', 'SAR', 'SEK', 'SGD', 'THB', 'TND', 'TRY', 'TWD', 'USD', 'VND', 'XAF', 'XOF', 'ZAR',
] as const;
export type Currency = (typeof SUPPORTED_CURRENCIES)[number];

const SUPPORTED: ReadonlySet<string> = new Set(SUPPORTED_CURRENCIES);

export function isSupportedCurrency(code: string): code is Currency {
  return SUPPORTED.has(code.toUpperCase());
}

/** Number of decimal places of the currency's minor unit (JPY 0, KWD 3, most 2). */
export function exponent(currency: string): number {
  return EXPONENT_EXCEPTIONS[currency.toUpperCase()] ?? 2;
}

const DECIMAL = /^([+-])?(\d+)(?:\.(\d+))?$/;

/**
 * `numerator / denominator` rounded half-even (banker's rounding), exact on bigints, for either
 * sign of either operand: 5/2 → 2, 7/2 → 4, -5/2 → -2, -7/2 → -4, 7/3 → 2. The one rounding
 * helper of the platform; every money division goes through it. Pure (no imports), so workflows
 * may use it. Throws a RangeError when `denominator` is 0n.
 */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new RangeError('divideHalfEven: division by zero');
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  let q = n / d;
  const twice = (n % d) * 2n;
  if (twice > d || (twice === d && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

/** `value / 10^shift` rounded half-even (a negative `shift` multiplies exactly). */
function divPow10HalfEven(value: bigint, shift: number): bigint {
  if (shift <= 0) return value * 10n ** BigInt(-shift);
  return divideHalfEven(value, 10n ** BigInt(shift));
}

/**
 * A decimal major-unit string ("19.995", "-3", "1000.5") as integer minor units of `currency`,
 * rounded half-even: toMinorUnits("19.995", "USD") = 2000, toMinorUnits("0.125", "USD") = 12,
 * toMinorUnits("1234.5", "JPY") = 1234.
 */
export function toMinorUnits(decimal: string | number, currency: string): number {
  const text = typeof decimal === 'number' ? numberToDecimalString(decimal) : decimal.trim();
  const m = DECIMAL.exec(text);
  if (!m) throw new RangeError(`not a decimal amount: ${JSON.stringify(decimal)}`);
  const fraction = m[3] ?? '';
  const digits = BigInt(`${m[2]}${fraction}`) * (m[1] === '-' ? -1n : 1n);
  const result = divPow10HalfEven(digits, fraction.length - exponent(currency));
  return Number(result);
}

/** Integer minor units as a decimal major-unit string with the currency's exponent: 1999 USD → "19.99". */
export function toDecimalString(minor: number | bigint, currency: string): string {
  const exp = exponent(currency);
  const value = BigInt(minor);
  const negative = value < 0n;
  const abs = (negative ? -value : value).toString().padStart(exp + 1, '0');
  const whole = exp === 0 ? abs : abs.slice(0, -exp);
  const frac = exp === 0 ? '' : `.${abs.slice(-exp)}`;
  return `${negative ? '-' : ''}${whole}${frac}`;
}

/** Minor units as a JSON number in major units (for fields the spec types `number`). */
export function toMajorNumber(minor: number | bigint, currency: string): number {
  return Number(toDecimalString(minor, currency));
}

/**
 * Converts `minor` units of `from` into `to` at `rate` (a decimal string: units of `to` per one
 * unit of `from`), rounding half-even to `to`'s exponent. Exact: the product is computed on bigints.
 */
export function convertMinorUnits(minor: number | bigint, from: string, to: string, rate: string): number {
  const m = DECIMAL.exec(rate.trim());
  if (!m || m[1] === '-') throw new RangeError(`not a positive decimal rate: ${JSON.stringify(rate)}`);
  const rateFraction = m[3] ?? '';
  const rateDigits = BigInt(`${m[2]}${rateFraction}`);
  // minor / 10^exp(from) * rate = result / 10^exp(to)
  const product = BigInt(minor) * rateDigits;
  const shift = rateFraction.length + exponent(from) - exponent(to);
  return Number(divPow10HalfEven(product, shift));
}

/** A JS number as a plain decimal string without exponent notation (for inputs typed `number`). */
function numberToDecimalString(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`not a finite amount: ${n}`);
  // Shortest round-trip representation, then expand any exponent.
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(20).replace(/\.?0+$/, '');
}
