import { Migration } from '@mikro-orm/migrations';

/**
 * Shipping: shipments (one workflow each), their carrier scans, ETA slips (one row per slip, so
 * `order.fulfillment.delayed` is recorded once per slip), pickups, the area's test clocks, the
 * receipts of carrier pushes (deduplicated by the carrier's event id), per-account carrier choices
 * and the admin actions taken on shipments.
 */
export class Migration0020Shipping extends Migration {
  override name = '0020-shipping';

  override up(): void {
    this.addSql(`
      create table shipping_test_clocks (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null check (livemode = false),
        name text null,
        frozen_time timestamptz not null,
        status text not null check (status in ('ready', 'advancing')),
        created_at timestamptz not null default now()
      )`);
    this.addSql(`create index shipping_test_clocks_scope on shipping_test_clocks (account_id, livemode, id)`);
    this.addSql(`
      create table shipping_shipments (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        order_id text not null,
        customer_id text null,
        status text not null check (status in ('pending', 'label_created', 'picked_up', 'in_transit', 'out_for_delivery', 'delivered', 'exception', 'returned_to_sender', 'cancelled')),
        carrier text not null,
        service_level text not null check (service_level in ('ground', 'express', 'overnight')),
        tracking_number text not null,
        carrier_reference text not null,
        label_url text not null,
        rate_amount bigint not null check (rate_amount >= 0),
        rate_currency text not null,
        rate_estimated_days integer not null,
        estimated_delivery timestamptz null,
        original_estimated_delivery timestamptz not null,
        origin jsonb not null,
        destination jsonb not null,
        packages jsonb not null,
        scenario text not null,
        test_clock_id text null references shipping_test_clocks (id),
        pickup_id text null,
        label_created_at timestamptz not null,
        delivered_at timestamptz null,
        cancelled_at timestamptz null,
        workflow_id text not null,
        progress_seq integer not null default 0,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      )`);
    this.addSql(`create index shipping_shipments_scope on shipping_shipments (account_id, livemode, id)`);
    this.addSql(`create index shipping_shipments_order on shipping_shipments (account_id, livemode, order_id)`);
    this.addSql(`create index shipping_shipments_clock on shipping_shipments (test_clock_id) where test_clock_id is not null`);
    this.addSql(`create unique index shipping_shipments_tracking on shipping_shipments (account_id, livemode, carrier, tracking_number)`);
    this.addSql(`
      create table shipping_tracking_events (
        shipment_id text not null references shipping_shipments (id),
        carrier_event_id text not null,
        account_id text not null,
        livemode boolean not null,
        status text not null,
        occurred_at timestamptz not null,
        location text not null,
        description text not null,
        source text not null check (source in ('poll', 'push', 'admin')),
        recorded_at timestamptz not null default now(),
        primary key (shipment_id, carrier_event_id)
      )`);
    this.addSql(`create index shipping_tracking_events_time on shipping_tracking_events (shipment_id, occurred_at)`);
    this.addSql(`
      create table shipping_delays (
        shipment_id text not null references shipping_shipments (id),
        previous_eta timestamptz not null,
        account_id text not null,
        livemode boolean not null,
        new_eta timestamptz null,
        reason text not null,
        recorded_at timestamptz not null default now(),
        primary key (shipment_id, previous_eta)
      )`);
    this.addSql(`
      create table shipping_pickups (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        carrier text not null,
        status text not null check (status in ('scheduled', 'cancelled')),
        confirmation_number text not null,
        carrier_reference text not null,
        pickup_date date not null,
        window_start text not null,
        window_end text not null,
        special_instructions text null,
        contact jsonb not null,
        address jsonb not null,
        shipment_ids jsonb not null,
        request_idempotency_key text null,
        created_at timestamptz not null default now(),
        cancelled_at timestamptz null
      )`);
    this.addSql(`create index shipping_pickups_scope on shipping_pickups (account_id, livemode, id)`);
    this.addSql(`
      create table shipping_push_receipts (
        carrier text not null,
        event_id text not null,
        account_id text not null,
        livemode boolean not null,
        shipment_id text not null,
        received_at timestamptz not null default now(),
        primary key (account_id, livemode, carrier, event_id)
      )`);
    this.addSql(`
      create table shipping_carrier_settings (
        account_id text not null references accounts (id),
        livemode boolean not null,
        default_carrier text null,
        enabled_carriers jsonb null,
        updated_at timestamptz not null default now(),
        primary key (account_id, livemode)
      )`);
    this.addSql(`
      create table shipping_admin_actions (
        id bigserial primary key,
        shipment_id text not null,
        account_id text not null,
        livemode boolean not null,
        action text not null,
        operator text not null,
        reason text not null,
        at timestamptz not null default now()
      )`);
  }

  override down(): void {
    for (const t of ['shipping_admin_actions', 'shipping_carrier_settings', 'shipping_push_receipts', 'shipping_pickups', 'shipping_delays', 'shipping_tracking_events', 'shipping_shipments', 'shipping_test_clocks']) {
      this.addSql(`drop table if exists ${t}`);
    }
  }
}
