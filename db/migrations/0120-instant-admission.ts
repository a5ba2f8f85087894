import { Migration } from '@mikro-orm/migrations';

/**
 * Admission for reads answered in one round trip (issue #21, api/http/admission.ts).
 *
 * `bp_admit_batch` gains `p_instant boolean[]` (default null: none), indexed like `p_key_hashes`.
 * An instant request is a read-only GET whose read already runs beside its admission: it is
 * answered as soon as it is admitted, so it is counted in the minute and day windows and checked
 * against the concurrency limit (it is refused when the key's slots are all held, and a batch
 * admits no more than the free slots), but it takes no slot: there is nothing to release after
 * it. Everything else is as in 0007; a caller that passes the 8 arguments of 0007 gets no instant
 * requests.
 */
export class Migration0120InstantAdmission extends Migration {
  override name = '0120-instant-admission';

  override up(): void {
    this.addSql(`
      drop function bp_admit_batch(text[], text, integer, integer, integer, integer, integer, bigint);

      create function bp_admit_batch(
        p_key_hashes text[], p_instance text,
        p_minute_standard integer, p_minute_premium integer, p_day_limit integer, p_concurrency integer, p_stale_seconds integer,
        p_clock_offset_ms bigint default 0, p_instant boolean[] default null
      ) returns table (
        ord integer, outcome text, key_id text, account_id text, key_type text, livemode boolean, permissions text[], tier text,
        minute_limit integer, minute_count integer, day_count integer, in_flight integer, now_epoch_ms bigint
      ) language plpgsql as $fn$
      declare
        v_now timestamptz := clock_timestamp();
        -- The clock the minute and day windows are counted on (and the headers describe).
        v_clock timestamptz := v_now + make_interval(secs => p_clock_offset_ms::double precision / 1000);
        v_now_ms bigint := (extract(epoch from v_clock) * 1000)::bigint;
        k record;
        v_n integer;
        v_limit integer;
        v_minute integer;
        v_day integer;
        v_in_flight integer;
        v_admit integer;
        v_held integer;
      begin
        -- Unknown, revoked and expired keys: answered without counting anything.
        return query
          select h.n::integer,
                 case when ak.id is null then 'unknown' when ak.status = 'revoked' then 'revoked' else 'expired' end,
                 ak.id, ak.account_id, ak.type, ak.livemode, ak.permissions, a.tier,
                 null::integer, null::integer, null::integer, null::integer, v_now_ms
            from unnest(p_key_hashes) with ordinality as h(key_hash, n)
            left join api_keys ak on ak.key_hash = h.key_hash
            left join accounts a on a.id = ak.account_id
           where ak.id is null or ak.status = 'revoked' or ak.expires_at <= v_now;

        for k in
          select ak.id, ak.account_id, ak.type, ak.livemode, ak.permissions, a.tier, array_agg(h.n order by h.n) as ords
            from unnest(p_key_hashes) with ordinality as h(key_hash, n)
            join api_keys ak on ak.key_hash = h.key_hash
            join accounts a on a.id = ak.account_id
           where ak.status <> 'revoked' and (ak.expires_at is null or ak.expires_at > v_now)
           group by ak.id, a.id
           order by ak.id
        loop
          v_n := cardinality(k.ords);
          v_limit := case when k.tier = 'premium' then p_minute_premium else p_minute_standard end;

          with counted as (
            insert into rate_limit_windows as w (api_key_id, period, window_start, count)
            values (k.id, 'minute', date_trunc('minute', v_clock), v_n), (k.id, 'day', date_trunc('day', v_clock, 'UTC'), v_n)
            on conflict (api_key_id, period, window_start) do update set count = w.count + excluded.count
            returning w.period, w.count
          )
          select max(count) filter (where period = 'minute') - v_n, max(count) filter (where period = 'day') - v_n
            into v_minute, v_day from counted;

          select coalesce(sum(c.in_flight), 0) into v_in_flight from concurrency_counters c
           where c.api_key_id = k.id and c.heartbeat_at > v_now - make_interval(secs => p_stale_seconds);

          v_admit := greatest(0, least(v_n, v_limit - v_minute, p_day_limit - v_day, p_concurrency - v_in_flight));
          -- The admitted requests marked instant are answered as they are admitted: they take no slot.
          select v_admit - count(*) into v_held from unnest(k.ords) with ordinality as o(ord, i)
           where o.i <= v_admit and coalesce(p_instant[o.ord], false);
          if v_held > 0 then
            insert into concurrency_counters as c (api_key_id, instance_id, in_flight, heartbeat_at)
              values (k.id, p_instance, v_held, v_now)
              on conflict (api_key_id, instance_id) do update
                set in_flight = case when c.heartbeat_at > v_now - make_interval(secs => p_stale_seconds) then c.in_flight + v_held else v_held end,
                    heartbeat_at = v_now;
          end if;
          if v_admit > 0 then
            update api_keys set last_used_at = v_now
             where id = k.id and (last_used_at is null or last_used_at < v_now - interval '10 seconds');
          end if;

          -- The i-th request of the key saw the windows at +i and the admissions before it.
          return query
            select o.ord::integer,
                   case when o.i <= v_admit then 'admitted'
                        when v_minute + o.i > v_limit then 'minute_limited'
                        when v_day + o.i > p_day_limit then 'day_limited'
                        else 'concurrency_limited' end,
                   k.id, k.account_id, k.type, k.livemode, k.permissions, k.tier,
                   v_limit, (v_minute + o.i)::integer, (v_day + o.i)::integer, (v_in_flight + least(o.i, v_admit))::integer, v_now_ms
              from unnest(k.ords) with ordinality as o(ord, i);
        end loop;
      end
      $fn$;
    `);
  }
}
