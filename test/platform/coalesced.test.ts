import { describe, expect, it } from 'vitest';
import { coalesced } from '../../platform/coalesced.ts';

/** A task the test releases by hand; records when each run started. */
function gatedTask() {
  const starts: number[] = [];
  let release: (() => void) | null = null;
  let fail = 0;
  const task = () => new Promise<void>((resolve, reject) => {
    starts.push(Date.now());
    release = fail > 0 ? (fail--, () => reject(new Error('down'))) : resolve;
  });
  const finish = async () => {
    while (!release) await new Promise((r) => setTimeout(r, 1));
    const r = release;
    release = null;
    r();
    await new Promise((r2) => setTimeout(r2, 0));
  };
  return { task, starts, finish, failNext: (n: number) => (fail = n), running: () => release !== null };
}

describe('coalesced', () => {
  it('runs once per moment: requests during a run share one more run after it', async () => {
    const t = gatedTask();
    const c = coalesced(t.task);
    c.request();
    for (let i = 0; i < 10; i++) c.request();
    expect(t.starts).toHaveLength(1);
    await t.finish();
    await t.finish(); // the one run the ten requests asked for
    await new Promise((r) => setTimeout(r, 20));
    expect(t.starts).toHaveLength(2);
    expect(t.running()).toBe(false);
    c.request(); // idle: starts at once
    expect(t.starts).toHaveLength(3);
    await t.finish();
    await c.stop();
  });

  it('keeps the interval between two runs\' starts, retries a failed run after its delay, and stops', async () => {
    const t = gatedTask();
    const errors: number[] = [];
    const c = coalesced(t.task, { minIntervalMs: 50, retryDelayMs: (n) => 30 * n, onError: (_e, n) => errors.push(n) });
    c.request();
    c.request();
    await t.finish();
    await t.finish();
    expect(t.starts[1]! - t.starts[0]!).toBeGreaterThanOrEqual(49);

    t.failNext(2);
    c.request();
    await t.finish(); // fails: retried without being asked
    await t.finish(); // fails again
    await t.finish(); // succeeds
    expect(errors).toEqual([1, 2]);
    expect(t.starts).toHaveLength(5);
    expect(t.starts[4]! - t.starts[3]!).toBeGreaterThanOrEqual(59);

    c.request();
    const stopped = c.stop();
    c.request(); // after stop: nothing
    await t.finish();
    await stopped;
    await new Promise((r) => setTimeout(r, 80));
    expect(t.starts).toHaveLength(6);
  });
});
