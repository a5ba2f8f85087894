import { condition } from '@temporalio/workflow';
import { REFUSALS, refuse } from '../kit/failures.ts';

/**
 * The one deadline of a transfer (end of its expected arrival day) or a cycle count (its deadline),
 * on workflow time, or, for a sandbox resource created with `test_clock_time`, on its own frozen
 * test clock that moves only with the `advanceTestClock` update. A clock advance answers once the
 * workflow has acted on the new time (the deadline step ran, or is not due yet), so a test sees the
 * event right after the advance, without sleeping.
 */
export class Deadline {
  #clock: number | null;
  #due = Number.POSITIVE_INFINITY;
  #settled = false;

  constructor(testClockStart: number | null | undefined) {
    this.#clock = testClockStart ?? null;
  }

  /** Epoch ms: the test clock's time, or workflow time. */
  now(): number {
    return this.#clock ?? Date.now();
  }

  /** Waits until `due` (epoch ms) passes or `done()` holds; true when the deadline passed first. */
  async passed(due: number, done: () => boolean): Promise<boolean> {
    this.#due = due;
    if (this.#clock !== null) {
      await condition(() => done() || this.#clock! >= due);
      return !done();
    }
    const left = due - Date.now();
    const settled = left > 0 ? await condition(done, left) : done();
    return !settled;
  }

  /** The deadline step ran (or there is none): clock advances answer at once from now on. */
  settle(): void {
    this.#settled = true;
  }

  validateAdvance(to: number, status: string, ready: boolean): void {
    if (this.#clock === null) {
      throw refuse(REFUSALS.rejected, 'This resource runs on real time; only one created in test mode with test_clock_time has a clock to advance.', {
        status: 409, code: 'no_test_clock', title: 'Conflict', current_state: status,
        suggestion: 'Create it with a test key and test_clock_time to drive its deadline.',
      });
    }
    if (!ready) throw refuse(REFUSALS.invalidTransition, `a ${status} resource has no clock to advance yet`, { current_state: status });
    if (to < this.#clock) {
      throw refuse(REFUSALS.validationFailed, 'The clock cannot go back.', {
        path: 'frozen_time', errors: [{ path: 'frozen_time', message: `must not be before the clock's time ${new Date(this.#clock).toISOString()}` }],
      });
    }
  }

  /** Moves the test clock; resolves once the workflow has acted on the new time. */
  async advance(to: number, done: () => boolean): Promise<void> {
    this.#clock = to;
    await condition(() => this.#settled || done() || this.#clock! < this.#due);
  }
}
