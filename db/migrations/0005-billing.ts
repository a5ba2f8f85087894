import { Migration } from '@mikro-orm/migrations';

/**
 * Billing: plans, tax rates, sandbox test clocks, subscriptions (a read model written only by the
 * subscription's workflow, guarded by a version so an older write never overwrites a newer one),
 * invoices (one per subscription period, unique), collection attempts (one payment per attempt)
 * and usage records.
 */
export class Migration0005Billing extends Migration {
  override name = '0005-billing';

  override up(): void {
    this.addSql(`
      create table billing_plans (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        currency text not null,
        amount bigint not null default 0 check (amount >= 0),
        interval text not null check (interval in ('monthly', 'quarterly', 'yearly')),
        usage jsonb null,
        dunning jsonb not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index billing_plans_scope on billing_plans (account_id, livemode, id desc);

      create table billing_tax_rates (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        jurisdiction text not null,
        name text not null,
        percentage numeric(9, 4) not null check (percentage >= 0 and percentage <= 100),
        created_at timestamptz not null
      );
      create index billing_tax_rates_scope on billing_tax_rates (account_id, livemode, jurisdiction);

      create table billing_test_clocks (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null check (livemode = false),
        name text null,
        frozen_time timestamptz not null,
        status text not null check (status in ('ready', 'advancing')),
        created_at timestamptz not null
      );
      create index billing_test_clocks_scope on billing_test_clocks (account_id, livemode, id desc);

      create table subscriptions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        plan_id text not null references billing_plans (id),
        billing_cycle text not null,
        status text not null check (status in ('trialing', 'active', 'paused', 'past_due', 'unpaid', 'canceled')),
        auto_collection boolean not null,
        days_until_due integer not null,
        trial_end timestamptz null,
        current_period_start timestamptz not null,
        current_period_end timestamptz not null,
        next_invoice_date timestamptz null,
        cancel_at_period_end boolean not null default false,
        canceled_at timestamptz null,
        paused_at timestamptz null,
        resumes_at timestamptz null,
        tax_jurisdiction text null,
        test_clock_id text null references billing_test_clocks (id),
        card_brand text null,
        card_last4 text null,
        card_exp_month smallint null,
        card_exp_year smallint null,
        card_token text null,
        workflow_id text not null,
        version integer not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index subscriptions_scope on subscriptions (account_id, livemode, id desc);
      create index subscriptions_customer on subscriptions (account_id, livemode, customer_id, id desc);
      create index subscriptions_clock on subscriptions (test_clock_id) where test_clock_id is not null;

      create table invoices (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null,
        subscription_id text not null references subscriptions (id),
        status text not null check (status in ('open', 'paid', 'uncollectible', 'void')),
        currency text not null,
        subtotal bigint not null,
        tax bigint not null,
        amount bigint not null,
        amount_paid bigint not null default 0,
        period_start timestamptz not null,
        period_end timestamptz not null,
        due_date date not null,
        line_items jsonb not null,
        taxes jsonb not null,
        payment_method text null,
        auto_collection boolean not null,
        attempt_count integer not null default 0,
        last_payment_id text null,
        paid_at timestamptz null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (subscription_id, period_start)
      );
      create index invoices_scope on invoices (account_id, livemode, id desc);
      create index invoices_customer on invoices (account_id, livemode, customer_id, id desc);
      create index invoices_subscription on invoices (subscription_id, id desc);

      create table invoice_collection_attempts (
        invoice_id text not null references invoices (id),
        attempt integer not null,
        payment_id text not null unique,
        status text not null check (status in ('processing', 'succeeded', 'failed')),
        failure_code text null,
        created_at timestamptz not null,
        primary key (invoice_id, attempt)
      );

      create table usage_records (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        subscription_id text not null references subscriptions (id),
        metric_name text not null,
        quantity numeric(20, 6) not null check (quantity >= 0),
        timestamp timestamptz not null,
        request_idempotency_key text null,
        invoice_id text null,
        created_at timestamptz not null
      );
      create index usage_records_period on usage_records (subscription_id, timestamp);
      create unique index usage_records_request_idempotency on usage_records (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;
    `);
  }
}
