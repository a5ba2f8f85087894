import { describe, expect, it } from 'vitest';
import { Mutex, continueAsNewDue } from '../../workflows/kit/entity.ts';
import { deferred } from '../support/deferred.ts';

describe('entity kit: Mutex', () => {
  it('runs uncontended work at once and hands back its own promise (no extra microtasks, so no reordered commands)', async () => {
    const lock = new Mutex();
    const work = deferred<number>();
    let started = false;
    const result = lock.runExclusive(() => {
      started = true;
      return work.promise;
    });
    expect(started).toBe(true);
    expect(result).toBe(work.promise);
    expect(lock.locked).toBe(true);
    work.resolve(7);
    expect(await result).toBe(7);
    await Promise.resolve();
    expect(lock.locked).toBe(false);
  });

  it('runs contended work one at a time, in arrival order', async () => {
    const lock = new Mutex();
    const steps: string[] = [];
    const gates = [deferred(), deferred(), deferred()];
    const runs = gates.map((gate, i) => lock.runExclusive(async () => {
      steps.push(`start ${i}`);
      await gate.promise;
      steps.push(`end ${i}`);
      return i;
    }));
    expect(steps).toEqual(['start 0']);
    // Released out of order: the later ones still wait for the lock, then run in turn.
    gates[2]!.resolve();
    gates[1]!.resolve();
    await new Promise((r) => setImmediate(r));
    expect(steps).toEqual(['start 0']);
    gates[0]!.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
    expect(steps).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
    await Promise.resolve();
    expect(lock.locked).toBe(false);
  });

  it('releases the lock when the work fails, synchronously or not, and passes the failure on', async () => {
    const lock = new Mutex();
    const failing = deferred();
    const first = lock.runExclusive(() => failing.promise);
    const second = lock.runExclusive(() => {
      throw new Error('refused');
    });
    const third = lock.runExclusive(() => 'ran');
    failing.reject(new Error('activity failed'));
    await expect(first).rejects.toThrow('activity failed');
    await expect(second).rejects.toThrow('refused');
    expect(await third).toBe('ran');
    await Promise.resolve();
    expect(lock.locked).toBe(false);
  });
});

describe('entity kit: continueAsNewDue', () => {
  it("is due for the workflow's own reason without asking the server", () => {
    // Outside a workflow, asking for workflowInfo() would throw: `true` must short-circuit.
    expect(continueAsNewDue(true)).toBe(true);
    expect(() => continueAsNewDue(false)).toThrow();
  });
});
