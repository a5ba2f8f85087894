/**
 * When a failed delivery is tried again. The schedule lists the nominal waits before each retry
 * (default 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h: roughly exponential, 11
 * attempts over 23 h 43 min); each wait is jittered by ±20 %, stretched to a receiver's
 * `Retry-After` when that is longer, and no attempt is made later than the window (24 h) after the
 * delivery's first attempt (a retry that would land later is made at the window's end).
 */
export interface RetryPolicy {
  scheduleMs: number[];
  windowMs: number;
  jitter: number;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const m = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(text);
  if (!m) throw new Error(`not a duration: ${text}`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

export function retryPolicy(settings: { WEBHOOK_RETRY_SCHEDULE: string; WEBHOOK_RETRY_WINDOW: string; WEBHOOK_RETRY_JITTER: number }): RetryPolicy {
  return {
    scheduleMs: settings.WEBHOOK_RETRY_SCHEDULE.split(',').map(parseDuration),
    windowMs: parseDuration(settings.WEBHOOK_RETRY_WINDOW),
    jitter: settings.WEBHOOK_RETRY_JITTER,
  };
}

/**
 * The time of the next attempt after failed attempt `retryIndex` (0 = the first attempt), or
 * null when the delivery gives up. `random` is in [0, 1).
 */
export function nextRetryAt(opts: {
  policy: RetryPolicy;
  retryIndex: number;
  firstAttemptAt: Date;
  now: Date;
  retryAfterMs: number | null;
  random: number;
}): Date | null {
  const { policy, retryIndex, now } = opts;
  if (retryIndex >= policy.scheduleMs.length) return null;
  const deadline = opts.firstAttemptAt.getTime() + policy.windowMs;
  if (now.getTime() >= deadline) return null;
  let delay = policy.scheduleMs[retryIndex]! * (1 + policy.jitter * (2 * opts.random - 1));
  if (opts.retryAfterMs !== null) delay = Math.max(delay, opts.retryAfterMs);
  return new Date(Math.min(now.getTime() + Math.round(delay), deadline));
}
