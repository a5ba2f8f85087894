import type { Pool } from 'pg';

/**
 * The sign-in throttle: attempts are counted per email (in each account tried, and across
 * accounts) and per client address, each bucket allowing `limit` failures per `windowMs` — as a
 * rate, not in fixed windows: the generic cell rate algorithm (GCRA). A bucket keeps a theoretical
 * arrival time `tat`; each counted attempt moves it one emission interval (`windowMs / limit`) past
 * `max(tat, now)`, and an attempt that would take it more than `windowMs` ahead is refused. So a
 * burst of `limit` failures is allowed, then one more per emission interval, and no instant (a
 * window's end) lets a guesser make twice the allowance. A refused attempt is refused whatever the
 * password, with the time until the next one is allowed; it is not counted.
 *
 * An attempt is counted before its password is checked (`admit`), in one statement per attempt,
 * so attempts sent in parallel cannot all pass a check made before any of them was counted. A
 * success clears the email's buckets and gives back the address's count (an office behind one
 * address signing in all day is not throttled by its successes).
 *
 * Unlike the admin API's FailedAuthThrottle (in memory, per process), the state is kept in
 * PostgreSQL (`login_throttle`): the dashboard and the OAuth login form are public, and behind a
 * load balancer each API process would otherwise multiply the allowance.
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

interface Bucket { bucket: string; intervalMs: number; ip: boolean }

export class LoginThrottle {
  readonly limits: ThrottleLimits;
  private readonly pool: () => Promise<Pool>;
  private readonly now: () => number;

  constructor(pool: () => Promise<Pool>, limits: ThrottleLimits = DEFAULT_THROTTLE, now: () => number = Date.now) {
    this.pool = pool;
    this.limits = limits;
    this.now = now;
  }

  private buckets(a: LoginAttempt): Bucket[] {
    const email = a.email.trim().toLowerCase().slice(0, 256);
    const perEmail = this.limits.windowMs / this.limits.perEmail;
    return [
      { bucket: `email:${email}`, intervalMs: perEmail, ip: false },
      ...(a.accountId ? [{ bucket: `account:${a.accountId.slice(0, 64)}:${email}`, intervalMs: perEmail, ip: false }] : []),
      { bucket: `ip:${a.ip.slice(0, 64)}`, intervalMs: this.limits.windowMs / this.limits.perIp, ip: true },
    ];
  }

  /**
   * Counts the attempt in each of its buckets, or refuses it: 0 when it may go on (and is counted,
   * as a failure until `recordSuccess`), else the milliseconds until it would be allowed (nothing
   * counted).
   */
  async admit(a: LoginAttempt): Promise<number> {
    const now = new Date(this.now());
    const all = this.buckets(a);
    const pool = await this.pool();
    // Counted first, then judged: the row locks of the upsert order parallel attempts, and each sees the ones before it.
    const { rows } = await pool.query<{ tat_ms: number }>(
      `insert into login_throttle as l (bucket, tat, failures)
       select bucket, $3::timestamptz + interval_ms * interval '1 millisecond', 1 from unnest($1::text[], $2::float8[]) as u(bucket, interval_ms)
       on conflict (bucket) do update set
         tat = greatest(l.tat, $3::timestamptz) + (excluded.tat - $3::timestamptz),
         failures = case when l.tat <= $3::timestamptz then 1 else l.failures + 1 end
       returning (extract(epoch from l.tat) * 1000)::float8 as tat_ms`,
      [all.map((b) => b.bucket), all.map((b) => b.intervalMs), now],
    );
    const over = Math.max(0, ...rows.map((r) => r.tat_ms - now.getTime() - this.limits.windowMs));
    if (over === 0) return 0;
    await this.giveBack(pool, all);
    return Math.max(1, Math.ceil(over));
  }

  /** A successful sign-in: the email's buckets are emptied, the address's count given back. */
  async recordSuccess(a: LoginAttempt): Promise<void> {
    const all = this.buckets(a);
    const pool = await this.pool();
    await pool.query('delete from login_throttle where bucket = any($1)', [all.filter((b) => !b.ip).map((b) => b.bucket)]);
    await this.giveBack(pool, all.filter((b) => b.ip));
  }

  /** Takes an attempt counted by `admit` off its buckets again. */
  async release(a: LoginAttempt): Promise<void> {
    await this.giveBack(await this.pool(), this.buckets(a));
  }

  private async giveBack(pool: Pool, buckets: Bucket[]): Promise<void> {
    await pool.query(
      `update login_throttle l set tat = l.tat - u.interval_ms * interval '1 millisecond', failures = greatest(l.failures - 1, 0)
         from unnest($1::text[], $2::float8[]) as u(bucket, interval_ms)
        where l.bucket = u.bucket`,
      [buckets.map((b) => b.bucket), buckets.map((b) => b.intervalMs)],
    );
  }
}
