/** Runs `fn` over `items`, at most `limit` at once (each worker takes the next item when it is done). */
export async function mapLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Gathers items into batches for `flush`: one flush in flight at a time, and what arrives meanwhile
 * goes in the next. The promise `add` returns settles when its item's flush has (rejects with it).
 * Under load a burst costs one round trip per batch, not one per item; alone, an item waits for nobody.
 */
export function batcher<T>(flush: (items: T[]) => Promise<void>): (item: T) => Promise<void> {
  let queue: { item: T; resolve(): void; reject(err: unknown): void }[] = [];
  let flushing = false;
  const run = async () => {
    flushing = true;
    while (queue.length) {
      const batch = queue;
      queue = [];
      try {
        await flush(batch.map((b) => b.item));
        for (const b of batch) b.resolve();
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    flushing = false;
  };
  return (item) => new Promise<void>((resolve, reject) => {
    queue.push({ item, resolve, reject });
    if (!flushing) void run();
  });
}

/** Runs the functions it is given at most `limit` at once, the others waiting in the order they came. */
export type Limiter = <T>(fn: () => Promise<T>) => Promise<T>;

export function limiter(limit: number): Limiter {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next(); // the slot passes on as it is
      else running--;
    }
  };
}

/**
 * Runs `tick` every `ms` without holding the process open, skipping a beat while the last tick is
 * still running (a slow database or thread pool never stacks ticks up). Returns the stop.
 */
export function every(ms: number, tick: () => Promise<unknown>): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void tick().finally(() => { running = false; });
  }, ms);
  timer.unref();
  return () => clearInterval(timer);
}
