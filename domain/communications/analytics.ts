import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../scope.ts';
import { CALL_CURRENCY } from './rates.ts';
import type { CallAnalyticsView } from './schemas.ts';

export type AnalyticsPeriod = 'day' | 'week' | 'month' | 'custom';

/** Integer division rounded half to even (banker's rounding), for money. */
export function divideHalfEven(total: number, by: number): number {
  if (by === 0) return 0;
  const q = Math.floor(total / by);
  const twice = 2 * (total - q * by);
  return twice > by || (twice === by && q % 2 !== 0) ? q + 1 : q;
}

/**
 * Call analytics over the account's calls created in the period, aggregated in SQL. The period is
 * the calendar day, week (Monday first) or month containing now in `timeZone`, or for `custom` the
 * dates `start` to `end` inclusive in `timeZone`. Durations are talk time of completed calls; quality
 * averages are over calls that have samples (answered ones); an empty period gives zeros.
 */
export async function callAnalytics(
  em: EntityManager, scope: Scope, q: { period: AnalyticsPeriod; start: string | null; end: string | null; timeZone: string; now?: Date },
): Promise<CallAnalyticsView> {
  const unit = q.period === 'custom' ? 'day' : q.period;
  const rows = await em.getConnection().execute<{
    start: Date; end: Date; total_calls: string; completed_calls: string; total_duration: string; average_mos: string | null;
    jitter_avg: string | null; packet_loss: string | null; total_cost: string; billed_minutes: string; by_status: Record<string, number> | null;
  }[]>(
    `with bounds as (
       select case when ?::text = 'custom' then (?::date)::timestamp at time zone ?
                   else date_trunc(?, ?::timestamptz at time zone ?) at time zone ? end as start,
              case when ?::text = 'custom' then ((?::date) + 1)::timestamp at time zone ?
                   else (date_trunc(?, ?::timestamptz at time zone ?) + ('1 ' || ?)::interval) at time zone ? end as "end"
     ), calls as (
       select c.* from comm_calls c, bounds b
        where c.account_id = ? and c.livemode = ? and c.created_at >= b.start and c.created_at < b."end"
     )
     select b.start, b."end",
            (select count(*) from calls) as total_calls,
            (select count(*) from calls where status = 'completed') as completed_calls,
            (select coalesce(sum(duration), 0) from calls where status = 'completed') as total_duration,
            (select round(avg(mos), 2) from calls where mos is not null) as average_mos,
            (select round(avg(jitter_ms), 2) from calls where jitter_ms is not null) as jitter_avg,
            (select round(avg(packet_loss), 3) from calls where packet_loss is not null) as packet_loss,
            (select coalesce(sum(cost), 0) from calls) as total_cost,
            (select coalesce(sum(billed_minutes), 0) from calls) as billed_minutes,
            (select jsonb_object_agg(status, n) from (select status, count(*)::int as n from calls group by status) s) as by_status
       from bounds b`,
    [
      q.period, q.start, q.timeZone, unit, (q.now ?? new Date()).toISOString(), q.timeZone, q.timeZone,
      q.period, q.end, q.timeZone, unit, (q.now ?? new Date()).toISOString(), q.timeZone, unit, q.timeZone,
      scope.accountId, scope.livemode,
    ],
  );
  const r = rows[0]!;
  const completed = Number(r.completed_calls);
  const totalDuration = Number(r.total_duration);
  const totalCost = Number(r.total_cost);
  const minutes = Number(r.billed_minutes);
  const num = (v: string | null) => (v === null ? null : Number(v));
  return {
    object: 'call_analytics',
    period: q.period,
    start: new Date(r.start).toISOString(),
    end: new Date(r.end).toISOString(),
    time_zone: q.timeZone,
    total_calls: Number(r.total_calls),
    completed_calls: completed,
    total_duration: totalDuration,
    average_duration: completed ? Math.round((totalDuration / completed) * 100) / 100 : 0,
    call_quality: { average_mos: num(r.average_mos), jitter_avg: num(r.jitter_avg), packet_loss: num(r.packet_loss) },
    costs: { total: totalCost, per_minute: divideHalfEven(totalCost, minutes), billed_minutes: minutes, currency: CALL_CURRENCY },
    by_status: r.by_status ?? {},
  };
}
