import type { Pool } from 'pg';
import type { Logger } from '../../platform/logger.ts';

export interface RequestLogEntry {
  requestId: string;
  accountId: string | null;
  apiKeyId: string | null;
  livemode: boolean | null;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  createdAt: Date;
  /** The problem document answered, when the request failed. */
  problem?: Record<string, unknown> | null;
}

/**
 * Collects request log entries in memory and writes them in one statement per flush (every
 * `flushMs`, or sooner when `maxBatch` entries are waiting), together with the per-key daily
 * roll-up the dashboard reads. Requests never wait on this write; a crash loses at most one
 * interval of log rows, never a response. A batch that cannot be written (the database is down)
 * is kept and written with a later flush; at most `maxPending` rows are kept, and when more come
 * the oldest are dropped and counted (`dropped`, logged and shown on /readyz).
 */
export class RequestLogBuffer {
  private entries: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** A flush waiting for the one before it to end (not started yet). */
  private queued: Promise<void> | null = null;
  private readonly pool: Pool;
  private readonly logger: Logger;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;
  /** Rows not written because the bound was reached while the database was unreachable. */
  private droppedRows = 0;
  /** Consecutive failed writes (the retry interval grows with them, up to 10 s). */
  private failures = 0;

  constructor(pool: Pool, logger: Logger, flushMs = 1000, maxBatch = 500, maxPending = 10_000) {
    this.pool = pool;
    this.logger = logger;
    this.flushMs = flushMs;
    this.maxBatch = maxBatch;
    this.maxPending = maxPending;
  }

  add(entry: RequestLogEntry): void {
    this.entries.push(entry);
    this.bound();
    if (this.entries.length >= this.maxBatch && this.failures === 0) void this.flush();
    else this.schedule();
  }

  /** Rows waiting to be written, and rows dropped so far because too many were waiting. */
  stats(): { pending: number; dropped: number } {
    return { pending: this.entries.length, dropped: this.droppedRows };
  }

  private schedule(): void {
    const delay = this.failures ? Math.min(this.flushMs * 2 ** this.failures, 10_000) : this.flushMs;
    this.timer ??= setTimeout(() => void this.flush(), delay).unref();
  }

  private bound(): void {
    const over = this.entries.length - this.maxPending;
    if (over <= 0) return;
    this.entries.splice(0, over);
    this.droppedRows += over;
    this.logger.warn('request log rows dropped', { dropped: over, dropped_total: this.droppedRows, kept: this.entries.length });
  }

  /**
   * Writes what is waiting; resolves once everything added before the call is stored. Rows added
   * while it writes are not chased: they wait for their interval or for a full batch, so under a
   * steady stream the log is written in batches of `maxBatch`, not one small statement after
   * another. Calls made before a queued flush has started share it.
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.queued ??= this.flushing.then(async () => {
      this.queued = null;
      let due = this.entries.length;
      while (due > 0) {
        const batch = this.entries.splice(0, Math.min(due, this.maxBatch));
        due -= batch.length;
        if (await this.write(batch)) continue;
        // Kept, in front of what came meanwhile, for the next attempt.
        this.entries.unshift(...batch);
        this.bound();
        this.schedule();
        return;
      }
      if (this.entries.length) this.schedule();
    });
    this.flushing = this.queued;
    return this.queued;
  }

  /** Writes one batch; false when it could not be written (it is then kept by the caller). */
  private async write(batch: RequestLogEntry[]): Promise<boolean> {
    // One JSON parameter (the rows as objects): cheaper to build than ten parallel arrays, and
    // PostgreSQL reads it in one pass (json_to_recordset).
    const rows = JSON.stringify(batch.map((e) => ({
      request_id: e.requestId, account_id: e.accountId, api_key_id: e.apiKeyId, livemode: e.livemode, method: e.method,
      path: e.path, status: e.status, duration_ms: e.durationMs, created_at: e.createdAt.toISOString(), problem: e.problem ?? null,
    })));
    try {
      await this.pool.query(
        `with rows as (
           select * from json_to_recordset($1::json) as t(request_id text, account_id text, api_key_id text, livemode boolean,
             method text, path text, status smallint, duration_ms float8, created_at timestamptz, problem jsonb)
         ), logged as (
           insert into request_logs (request_id, account_id, api_key_id, livemode, method, path, status, duration_ms, created_at, problem)
           select * from rows
         )
         insert into api_key_daily_usage as u (api_key_id, day, requests, errors, total_duration_ms)
         select api_key_id, (created_at at time zone 'UTC')::date, count(*), count(*) filter (where status >= 400), sum(duration_ms)
           from rows where api_key_id is not null
          group by 1, 2
         on conflict (api_key_id, day) do update set
           requests = u.requests + excluded.requests,
           errors = u.errors + excluded.errors,
           total_duration_ms = u.total_duration_ms + excluded.total_duration_ms`,
        [rows],
      );
      if (this.failures) this.logger.info('request log rows written after an outage', { rows: batch.length, still_pending: this.entries.length });
      this.failures = 0;
      return true;
    } catch (err) {
      this.failures++;
      this.logger.warn('request log batch not written; kept for a later attempt', {
        rows: batch.length, pending: this.entries.length + batch.length, dropped_total: this.droppedRows, error: (err as Error).message,
      });
      return false;
    }
  }
}
