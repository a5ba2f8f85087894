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
}

/**
 * Collects request log entries in memory and writes them in one statement per flush (every
 * `flushMs`, or sooner when `maxBatch` entries are waiting), together with the per-key daily
 * roll-up the dashboard reads. Requests never wait on this write; a crash loses at most one
 * interval of log rows, never a response.
 */
export class RequestLogBuffer {
  private entries: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly pool: Pool;
  private readonly logger: Logger;
  private readonly flushMs: number;
  private readonly maxBatch: number;

  constructor(pool: Pool, logger: Logger, flushMs = 1000, maxBatch = 500) {
    this.pool = pool;
    this.logger = logger;
    this.flushMs = flushMs;
    this.maxBatch = maxBatch;
  }

  add(entry: RequestLogEntry): void {
    this.entries.push(entry);
    if (this.entries.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
  }

  /** Writes what is waiting; resolves once everything added before the call is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.entries;
    this.entries = [];
    this.flushing = this.flushing.then(() => (batch.length ? this.write(batch) : undefined));
    return this.flushing;
  }

  private async write(batch: RequestLogEntry[]): Promise<void> {
    const cols = {
      request_id: batch.map((e) => e.requestId),
      account_id: batch.map((e) => e.accountId),
      api_key_id: batch.map((e) => e.apiKeyId),
      livemode: batch.map((e) => e.livemode),
      method: batch.map((e) => e.method),
      path: batch.map((e) => e.path),
      status: batch.map((e) => e.status),
      duration_ms: batch.map((e) => e.durationMs),
      created_at: batch.map((e) => e.createdAt.toISOString()),
    };
    try {
      await this.pool.query(
        `with rows as (
           select * from unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[],
                                $7::smallint[], $8::float8[], $9::timestamptz[])
             as t(request_id, account_id, api_key_id, livemode, method, path, status, duration_ms, created_at)
         ), logged as (
           insert into request_logs (request_id, account_id, api_key_id, livemode, method, path, status, duration_ms, created_at)
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
        Object.values(cols),
      );
    } catch (err) {
      this.logger.warn('request log batch not written', { rows: batch.length, error: (err as Error).message });
    }
  }
}
