import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nativePool } from '../../db/pool.ts';
import { DEFAULT_THROTTLE, LoginThrottle } from '../../domain/identity/throttle.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
usePlatform({}, (t) => ({ platform } = t));

const MINUTE = 60_000;
/** A 15-minute window's end, the instant a fixed-window counter starts again from zero. */
const WINDOW_END = Date.UTC(2026, 10, 28, 23, 30, 0);

/** A throttle on a test clock (the sign-in throttle's own limits: 5 per email, 50 per address, in 15 minutes). */
function throttleAt(start: number) {
  const clock = { now: start };
  const throttle = new LoginThrottle(() => nativePool(platform.orm), DEFAULT_THROTTLE, () => clock.now);
  return { throttle, clock };
}
const unique = () => randomBytes(6).toString('hex');

describe('the sign-in throttle (GCRA, in PostgreSQL)', () => {
  it('has no window edge: 50 failures from one address straddling a quarter hour still refuse the 51st', async () => {
    const { throttle, clock } = throttleAt(WINDOW_END - 2_000);
    const ip = `198.51.100.${unique()}`;
    for (let i = 0; i < 50; i++) {
      if (i === 25) clock.now = WINDOW_END + 1_000; // half before the quarter hour, half after
      expect(await throttle.admit({ email: `guess-${unique()}@example.com`, ip }), `attempt ${i + 1}`).toBe(0);
    }
    const blocked = await throttle.admit({ email: `guess-${unique()}@example.com`, ip });
    // One more is allowed an emission interval (15 min / 50 = 18 s) after the burst, not at once.
    expect(blocked).toBeGreaterThan(10_000);
    expect(blocked).toBeLessThanOrEqual(18_000);
  });

  it('allows a burst of the limit, then one attempt per emission interval; refusals are not counted', async () => {
    const { throttle, clock } = throttleAt(Date.UTC(2026, 10, 28, 10, 7, 13));
    const attempt = { email: `ada-${unique()}@example.com`, ip: `192.0.2.${unique()}` };
    for (let i = 0; i < 5; i++) expect(await throttle.admit(attempt)).toBe(0);
    const interval = 15 * MINUTE / 5;
    expect(await throttle.admit(attempt)).toBe(interval);
    // Hammering while refused changes nothing.
    for (let i = 0; i < 10; i++) expect(await throttle.admit(attempt)).toBe(interval);
    clock.now += interval - 1_000;
    expect(await throttle.admit(attempt)).toBe(1_000);
    clock.now += 1_000;
    expect(await throttle.admit(attempt)).toBe(0); // one more, then refused for another interval
    expect(await throttle.admit(attempt)).toBe(interval);
    // A quiet spell of the whole window gives back the whole burst.
    clock.now += 15 * MINUTE;
    for (let i = 0; i < 5; i++) expect(await throttle.admit(attempt)).toBe(0);
    const [row] = await platform.sql<{ failures: number }>('select failures from login_throttle where bucket = $1', [`email:${attempt.email}`]);
    expect(row!.failures).toBe(5);
  });

  it('counts parallel attempts one by one: of 20 at once, exactly the limit get through', async () => {
    const { throttle } = throttleAt(Date.UTC(2026, 10, 28, 11, 0, 0));
    const email = `parallel-${unique()}@example.com`;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => throttle.admit({ email, ip: `203.0.113.${i}-${unique()}` })));
    expect(results.filter((r) => r === 0)).toHaveLength(5);
    expect(results.filter((r) => r > 0)).toHaveLength(15);
  });

  it('a success empties the email\'s buckets and gives the address its attempt back; a release undoes an admission', async () => {
    const { throttle } = throttleAt(Date.UTC(2026, 10, 28, 12, 0, 0));
    const ip = `198.51.100.${unique()}`;
    const ada = { email: `ada-${unique()}@example.com`, ip };
    for (let i = 0; i < 4; i++) expect(await throttle.admit(ada)).toBe(0);
    await throttle.recordSuccess(ada);
    expect(await platform.sql('select 1 from login_throttle where bucket = $1', [`email:${ada.email}`])).toHaveLength(0);
    const [address] = await platform.sql<{ failures: number }>('select failures from login_throttle where bucket = $1', [`ip:${ip}`]);
    expect(address!.failures).toBe(3);
    // Five more failures for the email are allowed again; a released attempt is not one of them.
    const bob = { email: `bob-${unique()}@example.com`, ip: `192.0.2.${unique()}` };
    for (let i = 0; i < 5; i++) {
      expect(await throttle.admit(bob)).toBe(0);
      if (i === 0) await throttle.release(bob);
    }
    expect(await throttle.admit(bob)).toBe(0);
    expect(await throttle.admit(bob)).toBeGreaterThan(0);
  });
});
