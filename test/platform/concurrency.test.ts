import { describe, expect, it } from 'vitest';
import { limiter } from '../../platform/concurrency.ts';
import { deferred } from '../support/deferred.ts';

describe('limiter (the dispatcher passes share one for their workflow starts)', () => {
  it('runs at most its limit at once, the others in the order they came, and a failure frees its slot', async () => {
    const limit = limiter(2);
    const gates = Array.from({ length: 5 }, () => deferred());
    const began: number[] = [];
    let running = 0;
    let most = 0;
    const results = gates.map((gate, i) => limit(async () => {
      began.push(i);
      most = Math.max(most, ++running);
      try {
        await gate.promise;
        return i;
      } finally {
        running--;
      }
    }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(began).toEqual([0, 1]);

    gates[1]!.reject(new Error('start refused'));
    await expect(results[1]).rejects.toThrow('start refused');
    expect(began).toEqual([0, 1, 2]);

    gates[0]!.resolve();
    gates[2]!.resolve();
    expect(await results[0]).toBe(0);
    expect(await results[2]).toBe(2);
    gates[3]!.resolve();
    gates[4]!.resolve();
    expect(await Promise.all([results[3], results[4]])).toEqual([3, 4]);
    expect(began).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
  });
});
