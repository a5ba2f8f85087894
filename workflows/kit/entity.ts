/**
 * The shape of a long-lived entity workflow (Temporal's safe-message-handlers sample): a class holds
 * the state and its transitions; update handlers that change it run one at a time behind a
 * `Mutex`; the main loop waits with `condition(pred, timeout)` and, when the run is due to roll
 * over, continues as new only once every handler has finished. Pure and deterministic: it is
 * bundled into workflow code (no Node built-ins, no I/O, no clocks).
 */
import type { UpdateDefinition } from '@temporalio/common';
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo, type Workflow } from '@temporalio/workflow';

/**
 * A FIFO lock for workflow code. `runExclusive` calls `fn` synchronously when the lock is free
 * and hands back `fn`'s own promise, so an uncontended handler runs exactly as it would without
 * the lock (same microtask timing, hence the same command order on replay); a contended one waits
 * its turn.
 */
export class Mutex {
  #locked = false;
  readonly #waiting: (() => void)[] = [];

  get locked(): boolean {
    return this.#locked;
  }

  runExclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    if (!this.#locked) return this.#run(fn);
    return new Promise<void>((resolve) => this.#waiting.push(resolve)).then(() => this.#run(fn));
  }

  #run<T>(fn: () => T | Promise<T>): Promise<T> {
    this.#locked = true;
    let result: Promise<T>;
    try {
      result = Promise.resolve(fn()); // fn's own promise when it returns one
    } catch (err) {
      result = Promise.reject(err);
    }
    const release = (): void => {
      const next = this.#waiting.shift();
      if (next) next(); // the lock passes straight to the next in line
      else this.#locked = false;
    };
    result.then(release, release);
    return result;
  }
}

export interface ExclusiveUpdate<Args extends any[], Ret> {
  /**
   * Throws to refuse the update (an `ApplicationFailure`). Runs as the update's validator, and
   * again under the lock just before `handle`: an update that waited for the lock may find the
   * state changed, and then fails instead of applying to a state it was never checked against.
   */
  validate?: (...args: Args) => void;
  /** The transition itself; it holds the lock until the returned promise settles. */
  handle: (...args: Args) => Ret | Promise<Ret>;
}

/** Registers an update handler that runs behind `mutex` (validated on arrival and again under the lock). */
export function setExclusiveUpdateHandler<Ret, Args extends any[], Name extends string>(
  mutex: Mutex, update: UpdateDefinition<Ret, Args, Name>, { validate, handle }: ExclusiveUpdate<NoInfer<Args>, NoInfer<Ret>>,
): void {
  const handler = (...args: Args): Promise<Ret> => mutex.runExclusive(() => {
    validate?.(...args);
    return handle(...args);
  });
  // setHandler types its handler with a conditional type TypeScript cannot resolve for generic
  // `Args`/`Ret`; `handler` is exactly `(...args: Args) => Promise<Ret>`, checked above.
  setHandler(update, handler as never, validate ? { validator: validate } : {});
}

/**
 * True when this run should roll over: for the workflow's own reason (`due`, e.g. N cycles done in
 * this run) or because the server suggests it (the history is getting long). A cheap synchronous
 * check, so a loop that is not due pays nothing (not even a microtask) for asking.
 */
export function continueAsNewDue(due = false): boolean {
  return due || workflowInfo().continueAsNewSuggested;
}

export interface ContinueAsNewOptions<Args extends unknown[]> {
  /** Settles what the new run must not lose (e.g. pending row writes); awaited before the handlers are checked. */
  drain?: () => Promise<unknown>;
  /**
   * What to do while update or signal handlers are still running:
   * - 'wait' (the sample's shape): wait until all have finished, then continue as new;
   * - 'retry-later': return without continuing, so the caller goes on with its loop and asks again
   *   at its next step. For entities whose handlers wait on the main loop (an update that returns
   *   once the loop has done something), where waiting here would deadlock.
   */
  unfinishedHandlers: 'wait' | 'retry-later';
  /** Checked last: false drops the roll-over (e.g. the entity ended while draining). */
  stillWanted?: () => boolean;
  /** The new run's arguments (its state), read at the moment it continues. */
  args: () => Args;
}

/**
 * Continues as new once every handler has finished (`allHandlersFinished`), so no update is cut off
 * by the roll-over. Call it where the main loop has nothing half-done, and only when
 * `continueAsNewDue(...)` says so. Returns only when it did not continue (see `unfinishedHandlers`
 * and `stillWanted`).
 */
export async function continueAsNewWhenSuggested<W extends Workflow>(opts: ContinueAsNewOptions<Parameters<W>>): Promise<void> {
  for (;;) {
    await opts.drain?.();
    if (allHandlersFinished()) break;
    if (opts.unfinishedHandlers === 'retry-later') return;
    await condition(allHandlersFinished);
  }
  if (opts.stillWanted && !opts.stillWanted()) return;
  await continueAsNew<W>(...opts.args());
}
