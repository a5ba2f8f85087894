import { Migration } from '@mikro-orm/migrations';

/**
 * Analytics: generated reports (one workflow each), the revenue rollup (15-minute UTC buckets, so a
 * local day in any IANA zone, all of whose offsets are multiples of 15 minutes, is a whole number
 * of buckets), the rollup's watermark per account and mode, the admin actions log, and the views
 * through which analytics reads the other areas' tables. The views are the one place that knows
 * their columns: PostgreSQL refuses a later migration that drops a column a view uses, so a change
 * in billing, payments or commerce cannot silently break the figures (docs/analytics.md).
 */
export class Migration0070Analytics extends Migration {
  override name = '0070-analytics';

  override up(): void {
    this.addSql(`
      create table analytics_reports (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        report_type text not null check (report_type in ('financial', 'customer', 'inventory', 'sales')),
        format text not null check (format in ('pdf', 'excel', 'csv', 'json')),
        status text not null check (status in ('queued', 'running', 'succeeded', 'failed', 'canceled')),
        progress smallint not null default 0 check (progress between 0 and 100),
        date_start date not null,
        date_end date not null,
        timezone text not null,
        currency text null,
        filters jsonb not null default '{}',
        row_count integer null,
        file_name text null,
        file_size bigint null,
        content_type text null,
        file_deleted_at timestamptz null,
        expires_at timestamptz null,
        failure_code text null,
        failure_message text null,
        runs integer not null default 1,
        workflow_id text not null,
        request_idempotency_key text null,
        started_at timestamptz null,
        completed_at timestamptz null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        constraint analytics_reports_range check (date_start <= date_end)
      );
      create index analytics_reports_scope on analytics_reports (account_id, livemode, id desc);
      create index analytics_reports_expiring on analytics_reports (expires_at) where file_name is not null and file_deleted_at is null;
      create unique index analytics_reports_request_idempotency on analytics_reports (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table analytics_revenue_rollup (
        account_id text not null references accounts (id),
        livemode boolean not null,
        bucket timestamptz not null,
        stream text not null check (stream in ('subscriptions', 'one_time')),
        currency text not null,
        gross bigint not null,
        refunds bigint not null,
        entries integer not null,
        primary key (account_id, livemode, bucket, stream, currency)
      );

      create table analytics_rollup_state (
        account_id text not null references accounts (id),
        livemode boolean not null,
        refreshed_through timestamptz not null,
        refreshed_at timestamptz not null,
        primary key (account_id, livemode)
      );

      create table analytics_admin_actions (
        id bigserial primary key,
        operator text not null,
        reason text not null,
        action text not null,
        target text not null,
        account_id text null,
        livemode boolean null,
        details jsonb not null default '{}',
        created_at timestamptz not null default now()
      );
      create index analytics_admin_actions_target on analytics_admin_actions (target, id desc);

      -- Indexes for the live tail (everything after the rollup's watermark), on the other areas'
      -- tables but owned here: only analytics reads by these columns.
      create index analytics_invoices_paid on invoices (account_id, livemode, paid_at) where status = 'paid';
      create index analytics_payments_created on payments (account_id, livemode, created_at);
      create index analytics_refunds_created on payment_refunds (account_id, livemode, created_at) where status = 'succeeded';
      create index analytics_orders_fulfilled on orders (account_id, livemode, fulfilled_at) where fulfilled_at is not null;

      -- Revenue entries: money received, net of refunds. A paid invoice counts its amount_paid at
      -- paid_at (subscriptions); a succeeded payment that collected no invoice counts at its
      -- created_at (one_time; a marketplace split counts only its platform fee, and only once its
      -- transfers completed; a split paid from the platform's balance received nothing); a succeeded refund subtracts at its created_at, in the stream of the
      -- payment it refunds (refunds of splits are the split's own compensation and are left out).
      create view analytics_revenue_entries as
        select i.account_id, i.livemode, i.paid_at as at, i.currency, 'subscriptions'::text as stream, 'invoice'::text as source,
               i.id as source_id, i.customer_id, i.amount_paid::bigint as amount
          from invoices i
         where i.status = 'paid' and i.paid_at is not null and i.amount_paid > 0
        union all
        select p.account_id, p.livemode, p.created_at, p.currency, 'one_time', 'payment', p.id, p.customer_id,
               case when p.kind = 'marketplace_split' then coalesce(p.platform_fee, 0) else p.amount end
          from payments p
         where p.status in ('succeeded', 'partially_refunded', 'refunded')
           and (p.kind = 'charge' or p.split_status = 'completed')
           and p.funding = 'card'
           and not exists (select 1 from invoice_collection_attempts a where a.payment_id = p.id)
        union all
        select r.account_id, r.livemode, r.created_at, r.currency,
               case when exists (select 1 from invoice_collection_attempts a where a.payment_id = r.payment_id) then 'subscriptions' else 'one_time' end,
               'refund', r.id, p.customer_id, -r.amount
          from payment_refunds r join payments p on p.id = r.payment_id
         where r.status = 'succeeded' and p.kind = 'charge';

      -- Recurring revenue of each subscription, in minor units per month (quarterly / 3, yearly / 12),
      -- and the interval in which it counts: from its start (or the end of its trial) until it was
      -- canceled, paused or left unpaid.
      create view analytics_subscription_mrr as
        select s.account_id, s.livemode, s.id as subscription_id, s.customer_id, pl.currency, s.status,
               (case pl.interval when 'monthly' then pl.amount::numeric when 'quarterly' then pl.amount / 3.0 else pl.amount / 12.0 end) as monthly_amount,
               greatest(s.created_at, coalesce(s.trial_end, s.created_at)) as starts_at,
               case when s.status = 'canceled' then coalesce(s.canceled_at, s.updated_at)
                    when s.status in ('paused', 'unpaid') then coalesce(s.paused_at, s.updated_at) end as ends_at
          from subscriptions s join billing_plans pl on pl.id = s.plan_id;

      create view analytics_orders as
        select o.account_id, o.livemode, o.id, o.store_id, o.customer_id, o.status, o.currency, o.total_amount, o.created_at,
               o.fulfilled_at, o.fulfillment_deadline, o.payment_status,
               (select coalesce(sum((li->>'quantity')::int), 0) from jsonb_array_elements(o.line_items) li)::int as units
          from orders o;

      create view analytics_exchange_rates as
        select account_id, livemode, base_currency, quote_currency, rate from exchange_rates;

      create view analytics_customers as
        select account_id, livemode, id, email, coalesce(name, nullif(trim(concat_ws(' ', first_name, last_name)), '')) as name, created_at
          from customers;

      create view analytics_inventory as
        select l.account_id, l.livemode, l.warehouse_id, w.name as warehouse_name, l.sku, l.quantity, l.reserved,
               l.quantity - l.reserved as available, l.reorder_point, l.safety_stock, l.updated_at
          from inventory_levels l join warehouses w on w.id = l.warehouse_id;
    `);
  }

  override down(): void {
    this.addSql(`
      drop view if exists analytics_inventory, analytics_customers, analytics_exchange_rates, analytics_orders,
        analytics_subscription_mrr, analytics_revenue_entries;
      drop index if exists analytics_invoices_paid, analytics_payments_created, analytics_refunds_created, analytics_orders_fulfilled;
      drop table if exists analytics_admin_actions, analytics_rollup_state, analytics_revenue_rollup, analytics_reports;
    `);
  }
}
