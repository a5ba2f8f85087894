/**
 * A task that is asked for more often than it needs to run: one run at a time, and a request that
 * arrives while it runs (or waits) gets one more run after it, which every request of that moment
 * shares. So every request is followed by a run that started after it. A run starts no sooner than
 * `minIntervalMs` after the previous one started; after a run that threw, the next one (asked for
 * by the failure itself) waits `retryDelayMs(failures in a row)`.
 */
export interface Coalesced {
  /** Asks for a run. */
  request(): void;
  /** No more runs; resolves when the current one has ended. */
  stop(): Promise<void>;
}

export function coalesced(
  task: () => Promise<unknown>,
  opts: { minIntervalMs?: number; retryDelayMs?: (failures: number) => number; onError?: (err: unknown, failures: number) => void } = {},
): Coalesced {
  let current: Promise<void> = Promise.resolve();
  let active = false;
  let timer: NodeJS.Timeout | null = null;
  let wanted = false;
  let stopped = false;
  let failures = 0;

  const start = (): void => {
    current = run();
  };
  const run = async (): Promise<void> => {
    active = true;
    wanted = false;
    const started = Date.now();
    let delay = opts.minIntervalMs ?? 0;
    try {
      await task();
      failures = 0;
    } catch (err) {
      failures++;
      wanted = true;
      delay = opts.retryDelayMs?.(failures) ?? delay;
      opts.onError?.(err, failures);
    }
    active = false;
    if (!wanted || stopped) return;
    const wait = Math.max(0, delay - (Date.now() - started));
    if (wait === 0) return start();
    timer = setTimeout(() => {
      timer = null;
      start();
    }, wait);
    timer.unref();
  };

  return {
    request() {
      if (stopped) return;
      if (active || timer) wanted = true;
      else start();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await current;
    },
  };
}
