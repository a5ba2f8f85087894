import { validationFailed, type FieldError } from '../../../platform/errors.ts';

/**
 * Amounts between the platform (ISO 4217 minor units, domain/money.ts) and Stripe, for every
 * amount sent to or read from Stripe (charges, refunds, transfers, reversals, fees). Most
 * currencies go unchanged (Stripe's zero-decimal currencies are ISO's too). Stripe's documented
 * special cases (https://docs.stripe.com/currencies#special-cases):
 * - ISK and UGX: zero-decimal in ISO 4217, but Stripe takes them as two-decimal: the ISO amount ×
 *   100 (so its last two digits are 00).
 * - HUF and TWD: two-decimal in ISO 4217 and in Stripe, but Stripe charges them in whole units
 *   only: an amount with a non-zero fractional part is refused (422 here, before Stripe is called).
 */
interface StripeRule {
  /** Stripe amount = ISO minor units × factor. */
  factor: number;
  /** Only whole units (ISO minor units divisible by 100). */
  wholeUnitsOnly: boolean;
}

const RULES: Readonly<Record<string, StripeRule>> = {
  ISK: { factor: 100, wholeUnitsOnly: false },
  UGX: { factor: 100, wholeUnitsOnly: false },
  HUF: { factor: 1, wholeUnitsOnly: true },
  TWD: { factor: 1, wholeUnitsOnly: true },
};

const ruleOf = (currency: string): StripeRule | undefined => RULES[currency.toUpperCase()];

/** Why Stripe would refuse this amount (HUF, TWD with a fractional part), as a field error at `path`; null when it is fine. */
export function stripeAmountProblem(currency: string, minor: number, path = 'amount'): FieldError | null {
  if (ruleOf(currency)?.wholeUnitsOnly && minor % 100 !== 0) {
    return { path, message: `Stripe takes ${currency.toUpperCase()} in whole units only: use a multiple of 100 minor units (e.g. ${Math.floor(minor / 100) * 100} or ${Math.ceil(minor / 100) * 100})` };
  }
  return null;
}

/** An ISO minor-unit amount as Stripe takes it; a 422 `validation_failed` for an amount Stripe refuses. */
export function toStripeAmount(currency: string, minor: number, path = 'amount'): number {
  const problem = stripeAmountProblem(currency, minor, path);
  if (problem) throw validationFailed([problem]);
  return minor * (ruleOf(currency)?.factor ?? 1);
}

/** A Stripe amount in ISO minor units (ISK, UGX: ÷ 100, rounded half-even should Stripe send a fraction). */
export function fromStripeAmount(currency: string, amount: number): number {
  const factor = ruleOf(currency)?.factor ?? 1;
  if (factor === 1) return amount;
  const quotient = Math.floor(amount / factor);
  const remainder = amount - quotient * factor;
  if (remainder * 2 < factor) return quotient;
  if (remainder * 2 > factor) return quotient + 1;
  return quotient % 2 === 0 ? quotient : quotient + 1;
}
