import type { MikroORM } from '@mikro-orm/postgresql';
import type { Scope } from '../scope.ts';
import { escapeLike } from '../search.ts';

/**
 * What the dashboard reads from the request log and the per-key daily roll-up, always for one
 * account and mode (`Scope`). Plain SQL on the ORM's pool: aggregates over many rows, no entities.
 */

export interface RequestLogView {
  id: string;
  request_id: string;
  api_key_id: string | null;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  created_at: string;
  problem: Record<string, unknown> | null;
}

export interface RequestLogFilters {
  /** An exact status (404) or a class (`4xx`, `5xx`), or `failed` for every status from 400. */
  status?: string;
  /** A path prefix (`/v3/customers`). */
  path?: string;
  apiKeyId?: string;
  /** The `id` of the last row of the previous page. */
  before?: string;
  limit: number;
}

export interface DailyUsage {
  day: string;
  requests: number;
  errors: number;
}

export interface AccountUsage {
  /** Requests today (UTC) by every key of the account in this mode. */
  requests_today: number;
  /** Requests today by the account's busiest key: the per-key daily limit applies to it first. */
  busiest_key_today: number;
  /** Requests in the last 60 seconds. */
  requests_last_minute: number;
  average_response_ms: number | null;
  success_rate: number | null;
  /** The last 30 UTC days, oldest first, today included; days without requests are zeros. */
  days: DailyUsage[];
}

async function pool(orm: MikroORM) {
  return orm.em.getConnection().getNativeClient();
}

function statusCondition(status: string, param: number): { sql: string; value: number } | null {
  if (status === 'failed') return { sql: `status >= $${param}`, value: 400 };
  const cls = /^([1-5])xx$/i.exec(status);
  if (cls) return { sql: `status / 100 = $${param}`, value: Number(cls[1]) };
  if (/^[1-5]\d\d$/.test(status)) return { sql: `status = $${param}`, value: Number(status) };
  return null;
}

/** The newest requests first, filtered; an unknown status filter matches nothing rather than everything. */
export async function listRequestLogs(orm: MikroORM, scope: Scope, filters: RequestLogFilters): Promise<RequestLogView[]> {
  const where = ['account_id = $1', 'livemode = $2'];
  const values: unknown[] = [scope.accountId, scope.livemode];
  if (filters.status) {
    const cond = statusCondition(filters.status, values.length + 1);
    if (!cond) return [];
    where.push(cond.sql);
    values.push(cond.value);
  }
  if (filters.path) {
    values.push(`${escapeLike(filters.path)}%`);
    where.push(`path like $${values.length}`);
  }
  if (filters.apiKeyId) {
    values.push(filters.apiKeyId);
    where.push(`api_key_id = $${values.length}`);
  }
  if (filters.before && /^\d{1,18}$/.test(filters.before)) {
    values.push(filters.before);
    where.push(`id < $${values.length}::bigint`);
  }
  values.push(filters.limit);
  const { rows } = await (await pool(orm)).query(
    `select id::text, request_id, api_key_id, method, path, status, duration_ms, created_at, problem
       from request_logs where ${where.join(' and ')} order by created_at desc, id desc limit $${values.length}`,
    values,
  );
  return rows.map((r) => ({
    id: r.id, request_id: r.request_id, api_key_id: r.api_key_id, method: r.method, path: r.path, status: r.status,
    duration_ms: Math.round(Number(r.duration_ms) * 100) / 100, created_at: new Date(r.created_at).toISOString(), problem: r.problem,
  }));
}

/** Usage of the account's keys in one mode: today's totals, the last minute and 30 days per day. */
export async function accountUsage(orm: MikroORM, scope: Scope, now = new Date()): Promise<AccountUsage> {
  const db = await pool(orm);
  const today = now.toISOString().slice(0, 10);
  const [daily, minute] = await Promise.all([
    db.query(
      `select u.day::text as day, u.api_key_id, u.requests, u.errors, u.total_duration_ms
         from api_key_daily_usage u join api_keys k on k.id = u.api_key_id
        where k.account_id = $1 and k.livemode = $2 and u.day > $3::date - 30 and u.day <= $3::date`,
      [scope.accountId, scope.livemode, today],
    ),
    db.query(
      `select count(*)::int as n from request_logs
        where account_id = $1 and livemode = $2 and created_at > $3::timestamptz - interval '60 seconds' and created_at <= $3::timestamptz`,
      [scope.accountId, scope.livemode, now.toISOString()],
    ),
  ]);
  const byDay = new Map<string, DailyUsage>();
  let todayRequests = 0, todayErrors = 0, todayDuration = 0, busiest = 0;
  for (const r of daily.rows as { day: string; requests: number; errors: number; total_duration_ms: number }[]) {
    const d = byDay.get(r.day) ?? { day: r.day, requests: 0, errors: 0 };
    d.requests += r.requests;
    d.errors += r.errors;
    byDay.set(r.day, d);
    if (r.day === today) {
      todayRequests += r.requests;
      todayErrors += r.errors;
      todayDuration += Number(r.total_duration_ms);
      busiest = Math.max(busiest, r.requests);
    }
  }
  const days: DailyUsage[] = [];
  for (let i = 29; i >= 0; i--) {
    const day = new Date(Date.parse(`${today}T00:00:00Z`) - i * 86_400_000).toISOString().slice(0, 10);
    days.push(byDay.get(day) ?? { day, requests: 0, errors: 0 });
  }
  return {
    requests_today: todayRequests,
    busiest_key_today: busiest,
    requests_last_minute: (minute.rows[0] as { n: number }).n,
    average_response_ms: todayRequests ? Math.round((todayDuration / todayRequests) * 100) / 100 : null,
    success_rate: todayRequests ? Math.round(((todayRequests - todayErrors) / todayRequests) * 10_000) / 10_000 : null,
    days,
  };
}
