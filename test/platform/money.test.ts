import { describe, expect, it } from 'vitest';
import { priceIn } from '../../domain/commerce/pricing.ts';
import { convertMinorUnits, divideHalfEven, toMinorUnits } from '../../domain/money.ts';
import { SandboxGateway } from '../../domain/payments/gateways/sandbox.ts';
import { prorate } from '../../workflows/billing/shared.ts';

/** Half-even on small integers through binary floats, which are exact at this size: an independent reference. */
function referenceHalfEven(n: number, d: number): number {
  const x = n / d;
  const floor = Math.floor(x);
  const diff = x - floor;
  const rounded = diff < 0.5 ? floor : diff > 0.5 ? floor + 1 : floor % 2 === 0 ? floor : floor + 1;
  return rounded + 0; // -0 → 0: bigints have no negative zero
}

describe('divideHalfEven: the one rounding helper', () => {
  it.each([
    // [numerator, denominator, expected]
    [1n, 2n, 0n], // 0.5 → 0
    [3n, 2n, 2n], // 1.5 → 2
    [5n, 2n, 2n], // 2.5 → 2 (odd half rounds down to even)
    [7n, 2n, 4n], // 3.5 → 4
    [-1n, 2n, 0n], // -0.5 → 0
    [-3n, 2n, -2n], // -1.5 → -2
    [-5n, 2n, -2n], // -2.5 → -2 (the case the sales report's own copy rounded to -3)
    [-7n, 2n, -4n], // -3.5 → -4
    [5n, -2n, -2n], // the sign may sit on the denominator
    [-5n, -2n, 2n],
    [7n, 3n, 2n], // 2.33 → 2
    [8n, 3n, 3n], // 2.67 → 3
    [-7n, 3n, -2n],
    [-8n, 3n, -3n],
    [10n, 5n, 2n], // exact
    [-10n, 5n, -2n],
    [0n, 5n, 0n],
    [0n, -5n, 0n],
  ])('%i / %i → %i', (n, d, q) => {
    expect(divideHalfEven(n, d)).toBe(q);
  });

  it('agrees with a float reference on every small numerator and denominator', () => {
    for (let n = -60; n <= 60; n++) {
      for (let d = -8; d <= 8; d++) {
        if (d === 0) continue;
        expect([n, d, Number(divideHalfEven(BigInt(n), BigInt(d)))]).toEqual([n, d, referenceHalfEven(n, d)]);
      }
    }
  });

  it('is exact beyond 2^53, where binary floats are not', () => {
    const big = 2n ** 53n + 1n; // 9007199254740993, not representable as a double
    expect(divideHalfEven(big * 10n + 5n, 10n)).toBe(big + 1n); // …3.5 → …4
    expect(divideHalfEven(-(big * 10n + 5n), 10n)).toBe(-(big + 1n));
    expect(divideHalfEven((big + 1n) * 10n + 5n, 10n)).toBe(big + 1n); // …4.5 → …4
    expect(divideHalfEven(2n ** 64n + 1n, 2n)).toBe(2n ** 63n); // even quotient, half dropped
    expect(divideHalfEven(2n ** 64n + 3n, 2n)).toBe(2n ** 63n + 2n); // odd quotient, half rounded up
    expect(divideHalfEven(-(2n ** 64n + 3n), 2n)).toBe(-(2n ** 63n + 2n));
    expect(divideHalfEven(10n ** 30n + 1n, 10n ** 12n)).toBe(10n ** 18n);
  });

  it('refuses a zero denominator', () => {
    expect(() => divideHalfEven(1n, 0n)).toThrow(RangeError);
  });
});

describe('every money rounding goes through it', () => {
  it('decimal strings and conversions (domain/money.ts)', () => {
    expect(toMinorUnits('-0.125', 'USD')).toBe(-12);
    expect(toMinorUnits('-0.135', 'USD')).toBe(-14);
    expect(convertMinorUnits(-1001, 'USD', 'JPY', '150')).toBe(-1502); // -1501.5 → -1502
  });

  it('catalog prices through the inverse of a stored rate (domain/commerce/pricing.ts)', () => {
    const rates = new Map([['EUR>USD', '2']]); // 1 EUR = 2 USD stored; USD → EUR wanted
    expect(priceIn({ amount: 1001, currency: 'USD' }, 'EUR', rates).amount).toBe(500); // 500.5 → 500
    expect(priceIn({ amount: 1003, currency: 'USD' }, 'EUR', rates).amount).toBe(502); // 501.5 → 502
    expect(priceIn({ amount: 1001, currency: 'USD' }, 'EUR', rates).exchange_rate).toBe('1/2');
  });

  it('proration (workflows/billing/shared.ts)', () => {
    expect(prorate(1001, 15, 30)).toBe(500); // 500.5 → 500
    expect(prorate(1003, 15, 30)).toBe(502); // 501.5 → 502
    expect(prorate(-1003, 15, 30)).toBe(-502); // a credit rounds the same way
  });

  it('sandbox gateway fees (domain/payments/gateways/sandbox.ts)', () => {
    const noPool = () => Promise.reject(new Error('no database in this test'));
    const gateway = new SandboxGateway(noPool, { feePercent: '2.5', feeFixed: 0 });
    expect(gateway.fee(100, 'USD')).toBe(2); // 2.5 → 2
    expect(gateway.fee(300, 'USD')).toBe(8); // 7.5 → 8
    expect(gateway.fee(-300, 'USD')).toBe(-8);
    expect(new SandboxGateway(noPool).fee(1000, 'USD')).toBe(59); // 2.9 % of 10.00 = 29, + 30 fixed
  });
});
