import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseLocation, planRoute, walk } from '../../domain/warehouses/routing.ts';

/** 200 distinct bins in a 10-aisle, 40-bay warehouse, from a fixed seed (the figure in docs/warehouses.md). */
function bins(n: number, seed: number): string[] {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const set = new Set<string>();
  while (set.size < n) set.add(`${String.fromCharCode(65 + Math.floor(rnd() * 10))}-${String(1 + Math.floor(rnd() * 40)).padStart(2, '0')}-${1 + Math.floor(rnd() * 4)}`);
  return [...set];
}

describe('pick routes', () => {
  it('parses bins into aisle and bay coordinates; walking between aisles goes round the shorter end', () => {
    expect(parseLocation('B-03-2-C')).toMatchObject({ aisle: 1, x: 3, y: 4.5 });
    expect(parseLocation('shelf 3')).toMatchObject({ aisle: -1, x: 0, y: 0 });
    const a = parseLocation('A-02-1'), b = parseLocation('A-10-1'), c = parseLocation('C-10-1');
    expect(walk(a, b, 30)).toBe(12);
    expect(walk(b, c, 30)).toBe(6 + Math.min(15 + 15, 60 - 30)); // across two aisles, front or back: 30
    expect(walk(a, c, 30)).toBe(6 + Math.min(3 + 15, 60 - 18));
  });

  it('saves about 44 % on 200 locations against bin order, deterministically and quickly', () => {
    const locations = bins(200, 42);
    const t0 = performance.now();
    const route = planRoute(locations, true, 41 * 1.5);
    const ms = performance.now() - t0;
    expect(route.stops).toHaveLength(200);
    expect(new Set(route.stops)).toEqual(new Set(locations));
    expect(route).toMatchObject({ distance: 669, unoptimized_distance: 1194, saving_percent: 44 });
    expect(planRoute([...locations].reverse(), true, 41 * 1.5)).toEqual(route);
    expect(ms).toBeLessThan(2000);
  });

  it('never walks further than bin order, for any set of bins', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 30 })), { minLength: 1, maxLength: 25 }), (cells) => {
      const locations = cells.map(([aisle, bay]) => `${String.fromCharCode(65 + aisle)}-${String(bay).padStart(2, '0')}-1`);
      const route = planRoute(locations, true);
      expect(route.distance).toBeLessThanOrEqual(route.unoptimized_distance! + 1e-9);
      expect([...route.stops].sort()).toEqual([...new Set(locations)].sort());
    }), { numRuns: 100 });
  });
});
