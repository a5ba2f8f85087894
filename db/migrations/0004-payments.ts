import { Migration } from '@mikro-orm/migrations';

/**
 * Payments: payments (charges), their refunds and marketplace transfers, the per-account gateway
 * choice, and the sandbox gateway's own ledger (it plays an external gateway, so its tables are
 * separate from ours). No column anywhere holds a full card number or a CVC.
 */
export class Migration0004Payments extends Migration {
  override name = '0004-payments';

  override up(): void {
    this.addSql(`
      create table payments (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        kind text not null default 'charge' check (kind in ('charge', 'marketplace_split')),
        status text not null check (status in ('processing', 'succeeded', 'failed', 'partially_refunded', 'refunded')),
        amount bigint not null check (amount > 0),
        amount_refunded bigint not null default 0,
        currency text not null,
        customer_id text null,
        description text null,
        fraud_protection boolean not null default false,
        gateway text not null,
        gateway_reference text null,
        card_brand text not null,
        card_last4 text not null check (card_last4 ~ '^[0-9]{4}$'),
        card_exp_month smallint not null,
        card_exp_year smallint not null,
        card_token text not null,
        risk_score integer null,
        fees bigint null,
        settlement_expected_date date null,
        failure_code text null,
        decline_code text null,
        failure_message text null,
        platform_fee bigint null,
        rounding_remainder bigint null,
        split_status text null check (split_status in ('pending', 'completed', 'reversed', 'canceled')),
        workflow_id text not null,
        request_idempotency_key text null,
        request_id text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        constraint payments_refund_within_amount check (amount_refunded >= 0 and amount_refunded <= amount)
      );
      create index payments_scope on payments (account_id, livemode, id desc);
      create unique index payments_request_idempotency on payments (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table payment_refunds (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        payment_id text not null references payments (id),
        amount bigint not null check (amount > 0),
        currency text not null,
        status text not null check (status in ('pending', 'succeeded', 'failed')),
        reason text null,
        gateway_reference text null,
        failure_message text null,
        workflow_id text null,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index payment_refunds_payment on payment_refunds (payment_id, id);
      create unique index payment_refunds_request_idempotency on payment_refunds (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table payment_transfers (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        payment_id text not null references payments (id),
        position smallint not null,
        destination text not null,
        amount bigint not null check (amount >= 0),
        currency text not null,
        status text not null check (status in ('pending', 'paid', 'failed', 'reversed', 'canceled')),
        gateway_reference text null,
        failure_code text null,
        failure_message text null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (payment_id, position)
      );

      create table payment_gateway_settings (
        account_id text primary key references accounts (id),
        live_gateway text not null check (live_gateway in ('sandbox', 'stripe')),
        updated_at timestamptz not null
      );

      create table sandbox_gateway_tokens (
        token text primary key,
        brand text not null,
        last4 text not null,
        exp_month smallint not null,
        exp_year smallint not null,
        scenario text not null,
        fingerprint text not null,
        created_at timestamptz not null default now()
      );

      create table sandbox_gateway_charges (
        id text primary key,
        idempotency_key text not null unique,
        token text not null,
        fingerprint text not null,
        amount bigint not null,
        currency text not null,
        status text not null check (status in ('succeeded', 'declined', 'processing_error')),
        decline_code text null,
        risk_score integer null,
        fee bigint not null default 0,
        amount_refunded bigint not null default 0 check (amount_refunded <= amount),
        attempts integer not null default 1,
        completes_at timestamptz not null,
        created_at timestamptz not null default now()
      );
      create index sandbox_gateway_charges_fingerprint on sandbox_gateway_charges (fingerprint, created_at);

      create table sandbox_gateway_refunds (
        id text primary key,
        idempotency_key text not null unique,
        charge_id text not null references sandbox_gateway_charges (id),
        amount bigint not null,
        created_at timestamptz not null default now()
      );

      create table sandbox_gateway_transfers (
        id text primary key,
        idempotency_key text not null unique,
        destination text not null,
        amount bigint not null,
        currency text not null,
        source_charge text null,
        status text not null check (status in ('paid', 'failed')),
        failure_code text null,
        reversal_id text null unique,
        reversed_at timestamptz null,
        created_at timestamptz not null default now()
      );
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists sandbox_gateway_transfers, sandbox_gateway_refunds, sandbox_gateway_charges,
        sandbox_gateway_tokens, payment_gateway_settings, payment_transfers, payment_refunds, payments;
    `);
  }
}
