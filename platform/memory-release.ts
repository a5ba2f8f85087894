/**
 * Gives the memory of a busy spell back to the system once the process has been quiet for a while.
 *
 * V8 keeps the pages a full collection freed, pooled for the heap's next growth, so a process's
 * resident size stays at the high-water mark of its last burst until it restarts: a bare Node 24
 * process that churned 400 MB of garbage holds 573 MB resident with 58 MB live, and a regular full
 * collection changes nothing. Node gives V8's memory reducer nothing to go on (it waits for a low
 * allocation rate that an idle Node process never reports), so nothing else does this. Only a
 * memory-reducing ("last resort") collection hands the pooled pages back: the same process went to
 * 127 MB in 130 ms.
 *
 * The rule: every second, the share of that second the event loop was busy; once it has been under
 * `QUIET_UTILIZATION` for `idleMs` in a row, one memory-reducing collection runs on the main thread:
 * the first time to hand back what starting up left (the bench server: 372–381 → 297–310 MB), then
 * each time the resident size has grown by at least `minGrowthBytes` since the last release (after
 * an order burst: 524–559 → 360–409 MB). It stops the main thread while it runs (145–175 ms for
 * this platform's heap), which is why it waits for quiet: a request arriving then waits for it.
 * `MEMORY_RELEASE_IDLE_MS` (0: never) sets `idleMs`; docs/benchmarks.md, target 5, measures it.
 * The workflow threads' heaps are left to V8 (72–77 MB committed at the bench's peak).
 *
 * The free pages between glibc malloc's used blocks, which no V8 collection touches, are handed
 * back apart (platform/malloc-trim.ts, on the thread pool): after each such collection, and every
 * `trimEveryMs` whatever the load (`MALLOC_TRIM_INTERVAL_MS`; 0: only after a collection). Memory
 * probe: 250–295 MB after a burst against 311–356 without, peak 472–484 against 497–512.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { every } from './concurrency.ts';
import type { Logger } from './logger.ts';
import { trimMalloc } from './malloc-trim.ts';
import { memoryReleases } from './metrics.ts';

/** Below this share of busy time per second, the event loop counts as quiet. */
const QUIET_UTILIZATION = 0.05;
const MB = 1_048_576;

interface GcOptions { type: 'major'; execution: 'sync'; flavor: 'last-resort' }
type Collect = (options: GcOptions) => void;

/**
 * V8's `gc` function, without exposing it to the process's code: `--expose-gc` is set only while one
 * scratch context is created (contexts made later, the workflows' sandboxes among them, do not get
 * it), unless the process was started with it. Taken when this module loads: the entry points import
 * it before they start any thread that makes contexts of its own.
 */
const collect: Collect = (() => {
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (typeof exposed === 'function') return exposed;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Collect;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
})();

export interface MemoryReleaseOptions {
  /** How long the event loop must have been quiet before a release; 0: never. */
  idleMs: number;
  /** How often malloc's free pages are handed back (platform/malloc-trim.ts); 0: only after a release. */
  trimEveryMs: number;
  logger: Logger;
  /** Growth of the resident size since the last release that makes another worth its pause. */
  minGrowthBytes?: number;
  /** How often utilization is sampled. */
  sampleEveryMs?: number;
}

/** Starts watching for quiet and trimming; the returned function stops both. Does nothing when both are 0. */
export function startMemoryRelease({ idleMs, trimEveryMs, logger, minGrowthBytes = 64 * MB, sampleEveryMs = 1000 }: MemoryReleaseOptions): () => void {
  const stops: (() => void)[] = [];
  if (trimEveryMs > 0) stops.push(every(trimEveryMs, () => trimInBackground(logger)));
  if (idleMs > 0) {
    let baseline = 0; // the first quiet spell after the start releases
    let previous = performance.eventLoopUtilization();
    let quietMs = 0;
    stops.push(every(sampleEveryMs, async () => {
      const now = performance.eventLoopUtilization();
      quietMs = performance.eventLoopUtilization(now, previous).utilization < QUIET_UTILIZATION ? quietMs + sampleEveryMs : 0;
      previous = now;
      if (quietMs < idleMs) return;
      const before = process.memoryUsage.rss();
      if (before - baseline < minGrowthBytes) return;
      const started = performance.now();
      collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      const pauseMs = Math.round(performance.now() - started);
      await trimInBackground(logger);
      const after = process.memoryUsage.rss();
      baseline = after;
      quietMs = 0;
      previous = performance.eventLoopUtilization(); // the collection's own pause is not load
      memoryReleases.inc();
      logger.info('memory released', { rss_mb_before: Math.round(before / MB), rss_mb_after: Math.round(after / MB), pause_ms: pauseMs });
    }));
  }
  return () => {
    for (const stop of stops) stop();
  };
}

let trimFailureLogged = false;
/** malloc_trim on the thread pool; a failure is logged once and is no reason to stop. */
async function trimInBackground(logger: Logger): Promise<void> {
  try {
    await trimMalloc();
  } catch (error) {
    if (!trimFailureLogged) logger.warn('malloc_trim failed; the C allocator keeps its free pages', { error });
    trimFailureLogged = true;
  }
}
