import { Migration } from '@mikro-orm/migrations';

/**
 * Warehouses: the stock movements ledger (written by a trigger on `inventory_levels`, so every
 * change by every writer is recorded, with who and why taken from transaction-local settings),
 * the per-account-and-mode sequence the realtime feed numbers changes with (assigned at commit, so
 * sequence order is commit order) and its NOTIFY, stock in transit, pick lists, transfers and
 * cycle counts.
 */
export class Migration0030Warehouses extends Migration {
  override name = '0030-warehouses';

  override up(): void {
    this.addSql(`
      alter table inventory_levels add column in_transit integer not null default 0 check (in_transit >= 0);

      create table stock_movements (
        id bigserial primary key,
        account_id text not null,
        livemode boolean not null,
        warehouse_id text not null,
        sku text not null,
        quantity_before integer not null,
        quantity_after integer not null,
        reserved_before integer not null,
        reserved_after integer not null,
        in_transit_before integer not null,
        in_transit_after integer not null,
        reason text not null,
        reference text null,
        actor text null,
        request_id text null,
        seq bigint null,
        created_at timestamptz not null default now()
      );
      create unique index stock_movements_seq on stock_movements (account_id, livemode, seq);
      create index stock_movements_level on stock_movements (account_id, livemode, warehouse_id, sku, id);
      create index stock_movements_reason on stock_movements (account_id, livemode, reason, created_at);

      create table stock_sequences (
        account_id text not null,
        livemode boolean not null,
        last_seq bigint not null,
        primary key (account_id, livemode)
      );

      -- Every change of on-hand, reserved or in-transit stock, with the writer's context
      -- (set_config('bp.stock_reason' | 'bp.stock_reference' | 'bp.stock_actor' | 'bp.stock_request', …, true)).
      create function bp_record_stock_movement() returns trigger language plpgsql as $$
      declare
        qb integer := 0; rb integer := 0; tb integer := 0;
      begin
        if tg_op = 'UPDATE' then
          qb := old.quantity; rb := old.reserved; tb := old.in_transit;
        end if;
        if qb = new.quantity and rb = new.reserved and tb = new.in_transit then
          return null;
        end if;
        insert into stock_movements (account_id, livemode, warehouse_id, sku, quantity_before, quantity_after,
          reserved_before, reserved_after, in_transit_before, in_transit_after, reason, reference, actor, request_id)
        values (new.account_id, new.livemode, new.warehouse_id, new.sku, qb, new.quantity, rb, new.reserved, tb, new.in_transit,
          coalesce(nullif(current_setting('bp.stock_reason', true), ''), 'stock_change'),
          nullif(current_setting('bp.stock_reference', true), ''),
          nullif(current_setting('bp.stock_actor', true), ''),
          nullif(current_setting('bp.stock_request', true), ''));
        return null;
      end $$;
      create trigger inventory_levels_movements after insert or update on inventory_levels
        for each row execute function bp_record_stock_movement();

      -- At commit: the next number of the account and mode, and a NOTIFY for every API process.
      -- Holding the counter row from here to the commit makes sequence order equal commit order.
      create function bp_sequence_stock_movement() returns trigger language plpgsql as $$
      declare
        next_seq bigint;
      begin
        insert into stock_sequences (account_id, livemode, last_seq) values (new.account_id, new.livemode, 1)
          on conflict (account_id, livemode) do update set last_seq = stock_sequences.last_seq + 1
          returning last_seq into next_seq;
        update stock_movements set seq = next_seq where id = new.id;
        perform pg_notify('bp_inventory', json_build_object(
          'a', new.account_id, 'l', new.livemode, 's', next_seq, 'id', new.id, 'w', new.warehouse_id, 'k', new.sku,
          'q', new.quantity_after, 'r', new.reserved_after, 't', new.in_transit_after,
          'dq', new.quantity_after - new.quantity_before, 'dr', new.reserved_after - new.reserved_before,
          'dt', new.in_transit_after - new.in_transit_before,
          'why', new.reason, 'ref', new.reference, 'at', to_char(new.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text);
        return null;
      end $$;
      create constraint trigger stock_movements_sequence after insert on stock_movements
        deferrable initially deferred for each row execute function bp_sequence_stock_movement();

      create table pick_lists (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        warehouse_id text not null references warehouses (id),
        status text not null check (status in ('open', 'picking', 'completed', 'cancelled')),
        optimize_route boolean not null,
        order_ids jsonb not null,
        lines jsonb not null,
        route jsonb not null,
        short_picks jsonb not null default '[]',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        completed_at timestamptz null,
        cancelled_at timestamptz null
      );
      create index pick_lists_scope on pick_lists (account_id, livemode, id);
      -- An order is on at most one open or picking pick list.
      create table pick_list_orders (
        account_id text not null,
        livemode boolean not null,
        order_id text not null,
        pick_list_id text not null references pick_lists (id),
        active boolean not null default true,
        primary key (pick_list_id, order_id)
      );
      create unique index pick_list_orders_active on pick_list_orders (account_id, livemode, order_id) where active;

      create table warehouse_transfers (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        reference text not null,
        from_warehouse text not null references warehouses (id),
        to_warehouse text not null references warehouses (id),
        status text not null check (status in ('reserved', 'in_transit', 'partially_received', 'received', 'cancelled')),
        items jsonb not null,
        expected_arrival date null,
        carrier text null,
        workflow_id text not null unique,
        delayed_at timestamptz null,
        dispatched_at timestamptz null,
        received_at timestamptz null,
        cancelled_at timestamptz null,
        cancellation_reason text null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        check (from_warehouse <> to_warehouse)
      );
      create unique index warehouse_transfers_reference on warehouse_transfers (account_id, livemode, reference);
      create index warehouse_transfers_scope on warehouse_transfers (account_id, livemode, id);
      create table warehouse_transfer_receipts (
        id text primary key,
        transfer_id text not null references warehouse_transfers (id),
        items jsonb not null,
        created_at timestamptz not null
      );

      create table cycle_counts (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        warehouse_id text not null references warehouses (id),
        count_type text not null check (count_type in ('full', 'partial', 'abc_analysis')),
        status text not null check (status in ('counting', 'pending_approval', 'completed', 'cancelled')),
        snapshot_seq bigint not null,
        classification jsonb null,
        tolerance_percent numeric not null,
        tolerance_value bigint not null,
        deadline timestamptz not null,
        overdue_at timestamptz null,
        workflow_id text not null unique,
        approved_by text null,
        approval_note text null,
        cancellation_reason text null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        completed_at timestamptz null
      );
      create index cycle_counts_scope on cycle_counts (account_id, livemode, id);
      create table cycle_count_lines (
        cycle_count_id text not null references cycle_counts (id),
        sku text not null,
        location text null,
        abc_class text null,
        expected integer not null,
        counted integer null,
        counted_at timestamptz null,
        count_seq bigint null,
        movements_during integer not null default 0,
        variance integer null,
        unit_value bigint not null default 0,
        adjusted integer null,
        primary key (cycle_count_id, sku)
      );

      -- Operations' actions on transfers and counts (admin tRPC), with the operator and the reason.
      create table warehouse_admin_actions (
        id bigserial primary key,
        account_id text not null,
        livemode boolean not null,
        resource_id text not null,
        action text not null,
        operator text not null,
        reason text not null,
        created_at timestamptz not null default now()
      );
      create index warehouse_admin_actions_resource on warehouse_admin_actions (resource_id, id);
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists warehouse_admin_actions, cycle_count_lines, cycle_counts, warehouse_transfer_receipts, warehouse_transfers,
        pick_list_orders, pick_lists, stock_sequences, stock_movements;
      drop trigger if exists inventory_levels_movements on inventory_levels;
      drop function if exists bp_record_stock_movement(), bp_sequence_stock_movement();
      alter table inventory_levels drop column if exists in_transit;
    `);
  }
}
