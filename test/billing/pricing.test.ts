import { describe, expect, it } from 'vitest';
import { extend, taxOn, usageLines } from '../../domain/billing/pricing.ts';
import { addMonths, prorate } from '../../workflows/billing/shared.ts';

describe('tax rounding: half-even at the minor unit', () => {
  it.each([
    // [amount in minor units, percentage, expected tax]
    [1050, '5', 52], // 52.5 → 52 (even)
    [1150, '5', 58], // 57.5 → 58 (even)
    [1999, '19', 380], // 379.81 → 380
    [1000, '7.25', 72], // 72.5 → 72
    [1000, '7.35', 74], // 73.5 → 74
    [333, '19.6', 65], // 65.268 → 65
    [1, '50', 0], // 0.5 → 0
    [3, '50', 2], // 1.5 → 2
    [0, '20', 0],
    [-1050, '5', -52], // a credit line rounds the same way
  ])('%i at %s %% → %i', (amount, pct, tax) => {
    expect(taxOn(amount, pct)).toBe(tax);
  });

  it('works at the currency exponent: JPY (0 decimals) and KWD (3 decimals) amounts are already minor units', () => {
    expect(taxOn(105, '10')).toBe(10); // ¥10.5 → ¥10
    expect(taxOn(115, '10')).toBe(12); // ¥11.5 → ¥12
    expect(taxOn(12_345, '5')).toBe(617); // 617.25 fils → 617 (KWD 0.617)
    expect(taxOn(12_350, '5')).toBe(618); // 617.5 fils → 618
  });
});

describe('usage pricing', () => {
  it('multiplies decimal quantities by decimal unit amounts exactly, rounding half-even', () => {
    expect(extend('3', '0.5')).toBe(2); // 1.5 → 2
    expect(extend('5', '0.5')).toBe(2); // 2.5 → 2
    expect(extend('0.1', '30')).toBe(3);
    expect(extend('1234.567891', '1')).toBe(1235);
  });

  it('graduated tiers: each unit at the price of the tier it falls in', () => {
    const pricing = { metric_name: 'api_calls', unit_amount: '0', tiers: [{ up_to: 100, unit_amount: '2' }, { up_to: 1000, unit_amount: '1' }, { up_to: null, unit_amount: '0.5' }] };
    expect(usageLines(pricing, '50').map((l) => [l.quantity, l.amount])).toEqual([['50', 100]]);
    expect(usageLines(pricing, '1500').map((l) => [l.quantity, l.amount])).toEqual([['100', 200], ['900', 900], ['500', 250]]);
    expect(usageLines(pricing, '0')).toEqual([]);
  });
});

describe('periods and proration', () => {
  it('adds calendar months, clamping the day to the month', () => {
    expect(new Date(addMonths(Date.UTC(2025, 0, 31), 1)).toISOString()).toBe('2025-02-28T00:00:00.000Z');
    expect(new Date(addMonths(Date.UTC(2024, 0, 31), 1)).toISOString()).toBe('2024-02-29T00:00:00.000Z');
    expect(new Date(addMonths(Date.UTC(2025, 0, 31), 3)).toISOString()).toBe('2025-04-30T00:00:00.000Z');
    expect(new Date(addMonths(Date.UTC(2025, 10, 15), 12)).toISOString()).toBe('2026-11-15T00:00:00.000Z');
  });
  it('prorates on integers, half-even', () => {
    expect(prorate(1000, 15, 30)).toBe(500);
    expect(prorate(1001, 15, 30)).toBe(500); // 500.5 → 500
    expect(prorate(1003, 15, 30)).toBe(502); // 501.5 → 502
  });
});
