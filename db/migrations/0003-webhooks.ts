import { Migration } from '@mikro-orm/migrations';

/**
 * Webhooks: endpoints, deliveries (one per event and endpoint) and every delivery attempt; the
 * outbox gains the customer metrics stored at dispatch, the flag for test events, and a trigger
 * that tells the dispatcher (LISTEN bp_events) when a transaction that wrote events commits.
 */
export class Migration0003Webhooks extends Migration {
  override name = '0003-webhooks';

  override up(): void {
    this.addSql(`
      alter table events add column customer_metrics jsonb null;
      alter table events add column synthetic boolean not null default false;
      create index events_scope_type on events (account_id, livemode, type, id desc);

      -- One notification per inserting statement; PostgreSQL delivers it when the transaction
      -- commits (never for a rolled-back one) and folds duplicates within a transaction.
      create function bp_events_notify() returns trigger language plpgsql as $fn$
      begin
        perform pg_notify('bp_events', '');
        return null;
      end
      $fn$;
      create trigger events_notify after insert on events for each statement execute function bp_events_notify();

      create table webhook_endpoints (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        url text not null,
        description text null,
        events text[] not null,
        secret text not null,
        previous_secret text null,
        previous_secret_expires_at timestamptz null,
        enabled boolean not null default true,
        disabled_reason text null check (disabled_reason in ('gone')),
        failing_since timestamptz null,
        last_success_at timestamptz null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index webhook_endpoints_scope on webhook_endpoints (account_id, livemode, id desc);
      create index webhook_endpoints_events on webhook_endpoints using gin (events);

      create table webhook_deliveries (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        endpoint_id text not null references webhook_endpoints (id) on delete cascade,
        event_id text not null references events (id),
        event_type text not null,
        workflow_id text not null,
        test boolean not null default false,
        status text not null check (status in ('pending', 'delivered', 'failed')),
        attempts integer not null default 0,
        http_status smallint null,
        response_time_ms double precision null,
        last_error text null,
        delivered_at timestamptz null,
        -- The attempt (workflow run and retry index) that delivered: a re-run of that attempt does not send again.
        delivered_by text null,
        next_retry_at timestamptz null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      -- One delivery per (event, endpoint): a second run of the same delivery finds this row.
      create unique index webhook_deliveries_event_endpoint on webhook_deliveries (event_id, endpoint_id);
      create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id desc);
      create index webhook_deliveries_endpoint_status on webhook_deliveries (endpoint_id, status, id desc);

      create table webhook_delivery_attempts (
        id bigserial primary key,
        delivery_id text not null references webhook_deliveries (id) on delete cascade,
        account_id text not null,
        livemode boolean not null,
        number integer not null,
        started_at timestamptz not null,
        response_time_ms double precision null,
        http_status smallint null,
        outcome text not null check (outcome in ('delivered', 'failed', 'refused', 'timeout', 'network_error', 'gone')),
        error text null,
        response_excerpt text null,
        next_retry_at timestamptz null
      );
      create index webhook_delivery_attempts_delivery on webhook_delivery_attempts (delivery_id, id);
    `);
  }
}
