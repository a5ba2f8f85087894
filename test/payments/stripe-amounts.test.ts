import { describe, expect, it } from 'vitest';
import { fromStripeAmount, stripeAmountProblem, toStripeAmount } from '../../domain/payments/gateways/stripe-amounts.ts';
import { ApiError } from '../../platform/errors.ts';

describe('Stripe amounts (ISO 4217 minor units ↔ Stripe)', () => {
  it('sends ordinary currencies unchanged: two-decimal, zero-decimal and three-decimal alike', () => {
    expect(toStripeAmount('USD', 1999)).toBe(1999);
    expect(toStripeAmount('eur', 5)).toBe(5);
    expect(toStripeAmount('JPY', 500)).toBe(500);
    expect(toStripeAmount('KRW', 12345)).toBe(12345);
    expect(toStripeAmount('KWD', 1234)).toBe(1234);
    expect(fromStripeAmount('usd', 1999)).toBe(1999);
    expect(fromStripeAmount('JPY', 500)).toBe(500);
  });

  it('sends ISK and UGX (zero-decimal in ISO) as two-decimal: ×100, and reads them back ÷100', () => {
    expect(toStripeAmount('ISK', 500)).toBe(50_000);
    expect(toStripeAmount('isk', 1)).toBe(100);
    expect(toStripeAmount('UGX', 3700)).toBe(370_000);
    expect(fromStripeAmount('isk', 50_000)).toBe(500);
    expect(fromStripeAmount('UGX', 370_000)).toBe(3700);
    // A fraction from Stripe (never expected) is rounded half-even, not truncated.
    expect(fromStripeAmount('ISK', 149)).toBe(1);
    expect(fromStripeAmount('ISK', 150)).toBe(2);
    expect(fromStripeAmount('ISK', 250)).toBe(2);
    expect(fromStripeAmount('ISK', 251)).toBe(3);
    for (const minor of [0, 1, 99, 100, 12_345]) expect(fromStripeAmount('ISK', toStripeAmount('ISK', minor))).toBe(minor);
  });

  it('sends HUF and TWD unchanged in whole units, and refuses a fractional amount with 422 before any call', () => {
    expect(toStripeAmount('HUF', 1000)).toBe(1000);
    expect(toStripeAmount('twd', 25_000)).toBe(25_000);
    expect(fromStripeAmount('HUF', 1000)).toBe(1000);
    expect(stripeAmountProblem('HUF', 1000)).toBeNull();
    expect(stripeAmountProblem('USD', 1050)).toBeNull();
    expect(stripeAmountProblem('TWD', 1050, 'splits.0')).toMatchObject({ path: 'splits.0', message: expect.stringContaining('1000 or 1100') });

    const err = (() => {
      try {
        toStripeAmount('HUF', 1050);
        return null;
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 422, code: 'validation_failed', errors: [{ path: 'amount', message: expect.stringContaining('whole units') }] });
    expect(() => toStripeAmount('TWD', 1)).toThrow(ApiError);
  });
});
