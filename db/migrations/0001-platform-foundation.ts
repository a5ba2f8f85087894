import { Migration } from '@mikro-orm/migrations';

/** Accounts, API keys, customers, the event outbox, request logs, idempotency and rate limits. */
export class Migration0001PlatformFoundation extends Migration {
  override name = '0001-platform-foundation';

  override up(): void {
    this.addSql(`
      create table accounts (
        id text primary key,
        name text not null,
        tier text not null default 'standard' check (tier in ('standard', 'premium')),
        is_default boolean not null default false,
        created_at timestamptz not null
      );
      create unique index accounts_one_default on accounts (is_default) where is_default;

      create table api_keys (
        id text primary key,
        account_id text not null references accounts (id),
        name text not null,
        type text not null check (type in ('live', 'test', 'restricted')),
        livemode boolean not null,
        key_hash varchar(255) not null unique,
        masked text not null,
        permissions text[] not null default '{}',
        status text not null default 'active' check (status in ('active', 'revoked')),
        last_used_at timestamptz null,
        expires_at timestamptz null,
        revoked_at timestamptz null,
        created_at timestamptz not null
      );
      create index api_keys_account on api_keys (account_id, id desc);

      create table customers (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        email text null,
        first_name text null,
        last_name text null,
        name text null,
        customer_type text null check (customer_type in ('b2b', 'b2c', 'b2g')),
        company jsonb null,
        segments text[] not null default '{}',
        custom_fields jsonb not null default '{}',
        metadata jsonb not null default '{}',
        version integer not null default 1,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index customers_scope on customers (account_id, livemode, id desc);
      create index customers_scope_email on customers (account_id, livemode, lower(email));
      create index customers_segments on customers using gin (segments);

      create table events (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        type text not null,
        data jsonb not null,
        customer_id text null,
        request_id text null,
        dispatched_at timestamptz null,
        created_at timestamptz not null
      );
      create index events_scope on events (account_id, livemode, id desc);
      create index events_undispatched on events (id) where dispatched_at is null;

      create table request_logs (
        id bigserial primary key,
        request_id text not null,
        account_id text null,
        api_key_id text null,
        livemode boolean null,
        method text not null,
        path text not null,
        status smallint not null,
        duration_ms double precision not null,
        created_at timestamptz not null
      );
      create index request_logs_key_time on request_logs (api_key_id, created_at desc);
      create index request_logs_time on request_logs (created_at);

      create table api_key_daily_usage (
        api_key_id text not null,
        day date not null,
        requests integer not null default 0,
        errors integer not null default 0,
        total_duration_ms double precision not null default 0,
        primary key (api_key_id, day)
      );

      create table idempotency_records (
        account_id text not null,
        livemode boolean not null,
        key text not null,
        fingerprint varchar(255) not null,
        state text not null check (state in ('in_progress', 'completed')),
        response_status smallint null,
        response_headers jsonb null,
        response_body bytea null,
        locked_until timestamptz not null,
        created_at timestamptz not null,
        expires_at timestamptz not null,
        primary key (account_id, livemode, key)
      );
      create index idempotency_records_expiry on idempotency_records (expires_at);

      -- Rate-limit state is shared by every API process. Unlogged: losing counters in a database
      -- crash only forgives some requests, and skipping the WAL keeps the hot path cheap.
      create unlogged table rate_limit_windows (
        api_key_id text not null,
        period text not null,
        window_start timestamptz not null,
        count integer not null,
        primary key (api_key_id, period, window_start)
      );
      -- Requests in flight, one counter per key and API instance. An instance refreshes
      -- heartbeat_at while it has requests in flight; a crashed instance's count stops counting
      -- once its heartbeat is stale.
      create unlogged table concurrency_counters (
        api_key_id text not null,
        instance_id text not null,
        in_flight integer not null,
        heartbeat_at timestamptz not null,
        primary key (api_key_id, instance_id)
      );
    `);

    // Authentication and every rate limit in one round trip. Admissions of one key are serialised
    // by the lock on its minute-counter row (held to commit); each later statement of the function
    // sees what earlier admissions committed, so the in-flight sum is exact across instances.
    // An admission locks only its own key's rows, always in the same order (minute, day, this
    // instance's counter, the key), so admissions cannot deadlock with each other.
    this.addSql(`
      create function bp_admit(
        p_key_hash text, p_instance text,
        p_minute_standard integer, p_minute_premium integer, p_day_limit integer, p_concurrency integer, p_stale_seconds integer
      ) returns table (
        outcome text, key_id text, account_id text, key_type text, livemode boolean, permissions text[], tier text,
        minute_limit integer, minute_count integer, day_count integer, in_flight integer, now_epoch_ms bigint
      ) language plpgsql as $fn$
      declare
        k record;
        v_now timestamptz := clock_timestamp();
      begin
        now_epoch_ms := (extract(epoch from v_now) * 1000)::bigint;
        select ak.id, ak.account_id, ak.type, ak.livemode, ak.permissions, ak.status, ak.expires_at, a.tier
          into k from api_keys ak join accounts a on a.id = ak.account_id where ak.key_hash = p_key_hash;
        if not found then outcome := 'unknown'; return next; return; end if;
        key_id := k.id; account_id := k.account_id; key_type := k.type; livemode := k.livemode;
        permissions := k.permissions; tier := k.tier;
        if k.status = 'revoked' then outcome := 'revoked'; return next; return; end if;
        if k.expires_at is not null and k.expires_at <= v_now then outcome := 'expired'; return next; return; end if;
        minute_limit := case when k.tier = 'premium' then p_minute_premium else p_minute_standard end;
      
        with counted as (
          insert into rate_limit_windows as w (api_key_id, period, window_start, count)
          values (k.id, 'minute', date_trunc('minute', v_now), 1), (k.id, 'day', date_trunc('day', v_now, 'UTC'), 1)
          on conflict (api_key_id, period, window_start) do update set count = w.count + 1
          returning w.period, w.count
        )
        select max(count) filter (where period = 'minute'), max(count) filter (where period = 'day')
          into minute_count, day_count from counted;
      
        select coalesce(sum(c.in_flight), 0) into in_flight from concurrency_counters c
         where c.api_key_id = k.id and c.heartbeat_at > v_now - make_interval(secs => p_stale_seconds);
      
        if minute_count > minute_limit then outcome := 'minute_limited';
        elsif day_count > p_day_limit then outcome := 'day_limited';
        elsif in_flight >= p_concurrency then outcome := 'concurrency_limited';
        else
          insert into concurrency_counters as c (api_key_id, instance_id, in_flight, heartbeat_at)
            values (k.id, p_instance, 1, v_now)
            on conflict (api_key_id, instance_id) do update
              set in_flight = case when c.heartbeat_at > v_now - make_interval(secs => p_stale_seconds) then c.in_flight + 1 else 1 end,
                  heartbeat_at = v_now;
          in_flight := in_flight + 1;
          outcome := 'admitted';
          update api_keys set last_used_at = v_now
           where id = k.id and (last_used_at is null or last_used_at < v_now - interval '10 seconds');
        end if;
        return next;
      end
      $fn$;
    `);

    // Every request admitted in the same event-loop turn of an API instance, in one call. Keys are
    // taken in id order, so every batch (and every release, below) locks rows in one global order
    // and batches cannot deadlock; requests of one key in a batch are admitted one after another.
    this.addSql(`
      create function bp_admit_batch(
        p_key_hashes text[], p_instance text,
        p_minute_standard integer, p_minute_premium integer, p_day_limit integer, p_concurrency integer, p_stale_seconds integer
      ) returns table (
        ord integer, outcome text, key_id text, account_id text, key_type text, livemode boolean, permissions text[], tier text,
        minute_limit integer, minute_count integer, day_count integer, in_flight integer, now_epoch_ms bigint
      ) language plpgsql as $fn$
      declare
        r record;
      begin
        for r in
          select h.key_hash, h.n from unnest(p_key_hashes) with ordinality as h(key_hash, n)
            left join api_keys ak on ak.key_hash = h.key_hash
           order by ak.id nulls first, h.n
        loop
          return query select r.n::integer, a.* from bp_admit(r.key_hash, p_instance, p_minute_standard,
            p_minute_premium, p_day_limit, p_concurrency, p_stale_seconds) as a;
        end loop;
      end
      $fn$;

      -- Requests of one instance that finished: subtracted from its counters, locked in key order.
      create function bp_release(p_instance text, p_keys text[], p_counts integer[]) returns void
      language plpgsql as $fn$
      begin
        perform 1 from concurrency_counters c
         where c.instance_id = p_instance and c.api_key_id = any(p_keys)
         order by c.api_key_id for update;
        update concurrency_counters c set in_flight = greatest(0, c.in_flight - r.n)
          from unnest(p_keys, p_counts) as r(k, n)
         where c.api_key_id = r.k and c.instance_id = p_instance;
      end
      $fn$;

      -- An instance with requests in flight keeps its counters counting.
      create function bp_heartbeat(p_instance text, p_keys text[]) returns void
      language plpgsql as $fn$
      begin
        perform 1 from concurrency_counters c
         where c.instance_id = p_instance and c.api_key_id = any(p_keys)
         order by c.api_key_id for update;
        update concurrency_counters set heartbeat_at = clock_timestamp()
         where instance_id = p_instance and api_key_id = any(p_keys);
      end
      $fn$;
    `);
  }
}
