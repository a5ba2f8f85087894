import type { Pool } from 'pg';

/**
 * The sign-in throttle: failed sign-ins are counted per email (in each account tried, and across
 * accounts) and per client address, in fixed windows (aligned to the epoch). Once a bucket has
 * `limit` failures in the current window, every attempt it covers is refused with 429 until the
 * window ends — the right password included, so a guesser learns nothing from the refusal.
 *
 * Unlike the admin API's FailedAuthThrottle (in memory, per process), the counts are kept in
 * PostgreSQL (`login_throttle`): the dashboard and the OAuth login form are public, and behind a
 * load balancer each API process would otherwise multiply the allowance. A success clears the
 * email's buckets (not the address's).
 */
export interface ThrottleLimits {
  /** Failures per email (and per email in one account) per window. */
  perEmail: number;
  /** Failures per client address per window. */
  perIp: number;
  windowMs: number;
}

export const DEFAULT_THROTTLE: ThrottleLimits = { perEmail: 5, perIp: 50, windowMs: 15 * 60_000 };

export interface LoginAttempt { email: string; accountId?: string; ip: string }

function buckets(a: LoginAttempt, limits: ThrottleLimits): { bucket: string; limit: number }[] {
  const email = a.email.trim().toLowerCase().slice(0, 256);
  return [
    { bucket: `email:${email}`, limit: limits.perEmail },
    ...(a.accountId ? [{ bucket: `account:${a.accountId.slice(0, 64)}:${email}`, limit: limits.perEmail }] : []),
    { bucket: `ip:${a.ip.slice(0, 64)}`, limit: limits.perIp },
  ];
}

export class LoginThrottle {
  readonly limits: ThrottleLimits;
  private readonly pool: () => Promise<Pool>;
  private readonly now: () => number;

  constructor(pool: () => Promise<Pool>, limits: ThrottleLimits = DEFAULT_THROTTLE, now: () => number = Date.now) {
    this.pool = pool;
    this.limits = limits;
    this.now = now;
  }

  private window(): { start: Date; endsInMs: number } {
    const now = this.now();
    const start = Math.floor(now / this.limits.windowMs) * this.limits.windowMs;
    return { start: new Date(start), endsInMs: start + this.limits.windowMs - now };
  }

  /** Milliseconds until the attempt may be tried; 0 when no bucket it falls in is full. */
  async blockedFor(a: LoginAttempt): Promise<number> {
    const { start, endsInMs } = this.window();
    const all = buckets(a, this.limits);
    const { rows } = await (await this.pool()).query<{ bucket: string; failures: number }>(
      'select bucket, failures from login_throttle where bucket = any($1) and window_start = $2',
      [all.map((b) => b.bucket), start],
    );
    const full = rows.some((r) => r.failures >= all.find((b) => b.bucket === r.bucket)!.limit);
    return full ? endsInMs : 0;
  }

  async recordFailure(a: LoginAttempt): Promise<void> {
    const { start } = this.window();
    await (await this.pool()).query(
      `insert into login_throttle (bucket, window_start, failures) select unnest($1::text[]), $2, 1
       on conflict (bucket) do update set
         failures = case when login_throttle.window_start = excluded.window_start then login_throttle.failures + 1 else 1 end,
         window_start = excluded.window_start`,
      [buckets(a, this.limits).map((b) => b.bucket), start],
    );
  }

  async recordSuccess(a: LoginAttempt): Promise<void> {
    const emailBuckets = buckets(a, this.limits).filter((b) => !b.bucket.startsWith('ip:')).map((b) => b.bucket);
    await (await this.pool()).query('delete from login_throttle where bucket = any($1)', [emailBuckets]);
  }
}
