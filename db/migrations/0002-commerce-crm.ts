import { Migration } from '@mikro-orm/migrations';

/**
 * Commerce (stores, products, exchange rates, warehouses, stock, orders, marketplace listings) and
 * CRM (interactions, touchpoints, automation rules and runs, tasks, sandbox messages).
 */
export class Migration0002CommerceCrm extends Migration {
  override name = '0002-commerce-crm';

  override up(): void {
    this.addSql(`
      create table stores (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        url text null,
        default_currency text not null,
        fulfillment_deadline_seconds integer not null check (fulfillment_deadline_seconds > 0),
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index stores_scope on stores (account_id, livemode, id desc);

      create table products (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        store_id text not null references stores (id),
        name text not null,
        description text null,
        sku text not null,
        price bigint not null check (price >= 0),
        currency text not null,
        prices jsonb not null default '{}',
        categories text[] not null default '{}',
        variants jsonb not null default '[]',
        track_quantity boolean not null default true,
        unlimited boolean not null default false,
        reorder_point integer not null default 0 check (reorder_point >= 0),
        safety_stock integer not null default 0 check (safety_stock >= 0),
        active boolean not null default true,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      -- A store id belongs to one account and mode, so this is "SKU unique per store".
      create unique index products_store_sku on products (store_id, sku);
      create index products_scope on products (account_id, livemode, id desc);
      create index products_scope_sku on products (account_id, livemode, sku);
      create index products_categories on products using gin (categories);

      -- 1 base_currency = rate quote_currency.
      create table exchange_rates (
        account_id text not null references accounts (id),
        livemode boolean not null,
        base_currency text not null,
        quote_currency text not null,
        rate numeric(30, 12) not null check (rate > 0),
        updated_at timestamptz not null,
        primary key (account_id, livemode, base_currency, quote_currency)
      );

      create table warehouses (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        code text null,
        address jsonb null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index warehouses_scope on warehouses (account_id, livemode, id desc);
      create unique index warehouses_code on warehouses (account_id, livemode, code) where code is not null;

      -- Stock per (warehouse, SKU). available = quantity - reserved, never below zero: the checks
      -- are the last line of defence behind the conditional updates.
      create table inventory_levels (
        account_id text not null references accounts (id),
        livemode boolean not null,
        warehouse_id text not null references warehouses (id),
        sku text not null,
        quantity integer not null default 0 check (quantity >= 0),
        reserved integer not null default 0 check (reserved >= 0),
        safety_stock integer not null default 0 check (safety_stock >= 0),
        reorder_point integer not null default 0 check (reorder_point >= 0),
        location text null,
        updated_at timestamptz not null,
        primary key (account_id, livemode, warehouse_id, sku),
        constraint inventory_levels_reserved_le_quantity check (reserved <= quantity)
      );
      create index inventory_levels_sku on inventory_levels (account_id, livemode, sku, warehouse_id);

      create table orders (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        store_id text not null references stores (id),
        customer_id text not null references customers (id),
        status text not null check (status in ('processing', 'fulfilled', 'canceled')),
        payment_status text not null default 'unpaid' check (payment_status in ('unpaid', 'paid', 'refunded')),
        total_amount bigint not null check (total_amount >= 0),
        currency text not null,
        line_items jsonb not null,
        shipping_address jsonb not null,
        fulfillment_status text not null default 'pending' check (fulfillment_status in ('pending', 'delayed', 'fulfilled', 'canceled')),
        tracking_number text null,
        carrier text null,
        fulfillment_deadline timestamptz not null,
        workflow_id text not null unique,
        workflow_confirmed_at timestamptz null,
        paid_at timestamptz null,
        payment_id text null,
        fulfilled_at timestamptz null,
        canceled_at timestamptz null,
        cancellation_reason text null,
        metadata jsonb not null default '{}',
        version integer not null default 1,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index orders_scope on orders (account_id, livemode, id desc);
      create index orders_scope_customer on orders (account_id, livemode, customer_id, id desc);
      create index orders_scope_store on orders (account_id, livemode, store_id, id desc);
      create index orders_scope_created on orders (account_id, livemode, created_at);
      -- The reconciler's work list: orders whose workflow has not reported in yet.
      create index orders_unconfirmed on orders (created_at) where workflow_confirmed_at is null and status = 'processing';

      create table marketplace_listings (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        marketplace text not null,
        external_id text not null,
        product_id text not null references products (id),
        store_id text not null references stores (id),
        sku text not null,
        title text not null,
        price bigint not null,
        currency text not null,
        quantity integer not null,
        status text not null,
        issues jsonb not null default '[]',
        url text not null,
        synced_at timestamptz not null,
        created_at timestamptz not null,
        unique (account_id, livemode, marketplace, product_id)
      );
      create index marketplace_listings_scope on marketplace_listings (account_id, livemode, marketplace, id desc);

      create table customer_interactions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        type text not null check (type in ('call', 'email', 'meeting', 'chat', 'support_ticket')),
        direction text not null check (direction in ('inbound', 'outbound')),
        subject text null,
        notes text null,
        occurred_at timestamptz not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index customer_interactions_customer on customer_interactions (account_id, livemode, customer_id, id desc);

      create table customer_touchpoints (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        type text not null,
        source text null,
        url text null,
        occurred_at timestamptz not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index customer_touchpoints_customer on customer_touchpoints (account_id, livemode, customer_id, id desc);

      create table crm_automation_rules (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        trigger_event text not null,
        conditions jsonb not null default '[]',
        actions jsonb not null,
        enabled boolean not null default true,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index crm_automation_rules_scope on crm_automation_rules (account_id, livemode, id desc);
      create index crm_automation_rules_trigger on crm_automation_rules (account_id, livemode, trigger_event) where enabled;

      create table crm_automation_runs (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        rule_id text not null references crm_automation_rules (id),
        event_id text not null,
        workflow_id text not null,
        status text not null check (status in ('running', 'completed', 'failed')),
        results jsonb not null default '[]',
        created_at timestamptz not null,
        completed_at timestamptz null,
        unique (rule_id, event_id)
      );
      create index crm_automation_runs_rule on crm_automation_runs (account_id, livemode, rule_id, id desc);

      create table crm_tasks (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text null references customers (id),
        title text not null,
        description text null,
        status text not null check (status in ('open', 'completed')),
        priority text not null default 'normal' check (priority in ('low', 'normal', 'high')),
        assignee text null,
        due_at timestamptz null,
        rule_id text null,
        event_id text null,
        -- Set when an automation creates the task: a retried activity finds its task, not a twin.
        source_key text null unique,
        completed_at timestamptz null,
        metadata jsonb not null default '{}',
        version integer not null default 1,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index crm_tasks_scope on crm_tasks (account_id, livemode, id desc);
      create index crm_tasks_customer on crm_tasks (account_id, livemode, customer_id, id desc);

      create table crm_messages (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text null references customers (id),
        channel text not null,
        recipient text not null,
        body text not null,
        status text not null,
        provider_message_id text not null,
        source_key text null unique,
        created_at timestamptz not null
      );
      create index crm_messages_customer on crm_messages (account_id, livemode, customer_id, id desc);
    `);
  }
}
