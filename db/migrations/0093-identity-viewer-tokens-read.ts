import { Migration } from '@mikro-orm/migrations';

/**
 * `bp_admit_token`: a viewer's token with `<scope>:write` now reads that scope (0091 dropped the
 * write scope, so a viewer granted crm:write could not even read crm). Otherwise unchanged.
 */
export class Migration0093IdentityViewerTokensRead extends Migration {
  override name = '0093-identity-viewer-tokens-read';

  override up(): void {
    this.addSql(`
      create or replace function bp_admit_token(
        p_token text, p_instance text,
        p_minute_standard integer, p_minute_premium integer, p_day_limit integer, p_concurrency integer, p_stale_seconds integer,
        p_clock_offset_ms bigint default 0
      ) returns table (
        outcome text, key_id text, account_id text, key_type text, livemode boolean, permissions text[], tier text,
        minute_limit integer, minute_count integer, day_count integer, in_flight integer, now_epoch_ms bigint, scope text, subject text
      ) language plpgsql as $fn$
      declare
        v_now timestamptz := clock_timestamp();
        v_clock timestamptz := v_now + make_interval(secs => p_clock_offset_ms::double precision / 1000);
        v_now_ms bigint := (extract(epoch from v_clock) * 1000)::bigint;
        t record;
        c record;
        v_account text;
        v_role text;
        v_limit integer;
        v_minute integer;
        v_day integer;
        v_in_flight integer;
      begin
        select m.payload, m.expires_at, m.revoked_at into t
          from oidc_models m where m.model in ('AccessToken', 'ClientCredentials') and m.id = p_token;
        if not found then
          return query select 'unknown', null::text, null::text, null::text, null::boolean, null::text[], null::text,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, null::text, null::text;
          return;
        end if;
        select oc.id, oc.account_id, oc.livemode, oc.status, a.tier into c
          from oauth_clients oc join accounts a on a.id = oc.account_id where oc.id = t.payload->>'clientId';
        -- A user's token acts in the account the user signed in to (the subject is "<user>.<account>"),
        -- with the user's current membership; a client-credentials token in the client's own account.
        if t.payload ? 'accountId' then
          v_account := split_part(t.payload->>'accountId', '.', 2);
          select am.role into v_role from account_members am
           where am.account_id = v_account and am.user_id = split_part(t.payload->>'accountId', '.', 1);
        else
          v_account := c.account_id;
          v_role := 'owner';
        end if;
        if t.revoked_at is not null or c.id is null or c.status = 'revoked' or v_role is null then
          return query select 'revoked', c.id, v_account, 'restricted', c.livemode, null::text[], c.tier,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
          return;
        end if;
        if t.expires_at <= v_now then
          return query select 'expired', c.id, v_account, 'restricted', c.livemode, null::text[], c.tier,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
          return;
        end if;

        v_limit := case when c.tier = 'premium' then p_minute_premium else p_minute_standard end;
        with counted as (
          insert into rate_limit_windows as w (api_key_id, period, window_start, count)
          values (c.id, 'minute', date_trunc('minute', v_clock), 1), (c.id, 'day', date_trunc('day', v_clock, 'UTC'), 1)
          on conflict (api_key_id, period, window_start) do update set count = w.count + 1
          returning w.period, w.count
        )
        select max(count) filter (where period = 'minute'), max(count) filter (where period = 'day')
          into v_minute, v_day from counted;
        select coalesce(sum(cc.in_flight), 0) into v_in_flight from concurrency_counters cc
         where cc.api_key_id = c.id and cc.heartbeat_at > v_now - make_interval(secs => p_stale_seconds);

        if v_minute <= v_limit and v_day <= p_day_limit and v_in_flight < p_concurrency then
          insert into concurrency_counters as cc (api_key_id, instance_id, in_flight, heartbeat_at)
            values (c.id, p_instance, 1, v_now)
            on conflict (api_key_id, instance_id) do update
              set in_flight = case when cc.heartbeat_at > v_now - make_interval(secs => p_stale_seconds) then cc.in_flight + 1 else 1 end,
                  heartbeat_at = v_now;
          return query select 'admitted', c.id, v_account, 'restricted', c.livemode,
            -- A viewer's token reads only, whatever scopes it was granted: <scope>:write counts as <scope>:read.
            array(select distinct case when v_role = 'viewer' then regexp_replace(s, ':write$', ':read') else s end
                    from unnest(string_to_array(t.payload->>'scope', ' ')) s where s ~ '^[a-z_]+:(read|write)$'),
            c.tier, v_limit, v_minute, v_day, v_in_flight + 1, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
        else
          return query select case when v_minute > v_limit then 'minute_limited' when v_day > p_day_limit then 'day_limited' else 'concurrency_limited' end,
            c.id, v_account, 'restricted', c.livemode, null::text[], c.tier, v_limit, v_minute, v_day, v_in_flight, v_now_ms,
            t.payload->>'scope', t.payload->>'accountId';
        end if;
      end
      $fn$;
    `);
  }

  override down(): void {
    this.addSql(`
      create or replace function bp_admit_token(
        p_token text, p_instance text,
        p_minute_standard integer, p_minute_premium integer, p_day_limit integer, p_concurrency integer, p_stale_seconds integer,
        p_clock_offset_ms bigint default 0
      ) returns table (
        outcome text, key_id text, account_id text, key_type text, livemode boolean, permissions text[], tier text,
        minute_limit integer, minute_count integer, day_count integer, in_flight integer, now_epoch_ms bigint, scope text, subject text
      ) language plpgsql as $fn$
      declare
        v_now timestamptz := clock_timestamp();
        v_clock timestamptz := v_now + make_interval(secs => p_clock_offset_ms::double precision / 1000);
        v_now_ms bigint := (extract(epoch from v_clock) * 1000)::bigint;
        t record;
        c record;
        v_account text;
        v_role text;
        v_limit integer;
        v_minute integer;
        v_day integer;
        v_in_flight integer;
      begin
        select m.payload, m.expires_at, m.revoked_at into t
          from oidc_models m where m.model in ('AccessToken', 'ClientCredentials') and m.id = p_token;
        if not found then
          return query select 'unknown', null::text, null::text, null::text, null::boolean, null::text[], null::text,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, null::text, null::text;
          return;
        end if;
        select oc.id, oc.account_id, oc.livemode, oc.status, a.tier into c
          from oauth_clients oc join accounts a on a.id = oc.account_id where oc.id = t.payload->>'clientId';
        -- A user's token acts in the account the user signed in to (the subject is "<user>.<account>"),
        -- with the user's current membership; a client-credentials token in the client's own account.
        if t.payload ? 'accountId' then
          v_account := split_part(t.payload->>'accountId', '.', 2);
          select am.role into v_role from account_members am
           where am.account_id = v_account and am.user_id = split_part(t.payload->>'accountId', '.', 1);
        else
          v_account := c.account_id;
          v_role := 'owner';
        end if;
        if t.revoked_at is not null or c.id is null or c.status = 'revoked' or v_role is null then
          return query select 'revoked', c.id, v_account, 'restricted', c.livemode, null::text[], c.tier,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
          return;
        end if;
        if t.expires_at <= v_now then
          return query select 'expired', c.id, v_account, 'restricted', c.livemode, null::text[], c.tier,
            null::integer, null::integer, null::integer, null::integer, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
          return;
        end if;

        v_limit := case when c.tier = 'premium' then p_minute_premium else p_minute_standard end;
        with counted as (
          insert into rate_limit_windows as w (api_key_id, period, window_start, count)
          values (c.id, 'minute', date_trunc('minute', v_clock), 1), (c.id, 'day', date_trunc('day', v_clock, 'UTC'), 1)
          on conflict (api_key_id, period, window_start) do update set count = w.count + 1
          returning w.period, w.count
        )
        select max(count) filter (where period = 'minute'), max(count) filter (where period = 'day')
          into v_minute, v_day from counted;
        select coalesce(sum(cc.in_flight), 0) into v_in_flight from concurrency_counters cc
         where cc.api_key_id = c.id and cc.heartbeat_at > v_now - make_interval(secs => p_stale_seconds);

        if v_minute <= v_limit and v_day <= p_day_limit and v_in_flight < p_concurrency then
          insert into concurrency_counters as cc (api_key_id, instance_id, in_flight, heartbeat_at)
            values (c.id, p_instance, 1, v_now)
            on conflict (api_key_id, instance_id) do update
              set in_flight = case when cc.heartbeat_at > v_now - make_interval(secs => p_stale_seconds) then cc.in_flight + 1 else 1 end,
                  heartbeat_at = v_now;
          return query select 'admitted', c.id, v_account, 'restricted', c.livemode,
            -- A viewer's token reads only, whatever scopes it was granted.
            array(select s from unnest(string_to_array(t.payload->>'scope', ' ')) s
                   where s ~ '^[a-z_]+:(read|write)$' and (v_role <> 'viewer' or s like '%:read')),
            c.tier, v_limit, v_minute, v_day, v_in_flight + 1, v_now_ms, t.payload->>'scope', t.payload->>'accountId';
        else
          return query select case when v_minute > v_limit then 'minute_limited' when v_day > p_day_limit then 'day_limited' else 'concurrency_limited' end,
            c.id, v_account, 'restricted', c.livemode, null::text[], c.tier, v_limit, v_minute, v_day, v_in_flight, v_now_ms,
            t.payload->>'scope', t.payload->>'accountId';
        end if;
      end
      $fn$;
    `);
  }
}
