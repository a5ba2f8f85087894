import { Migration } from '@mikro-orm/migrations';

/**
 * Rewards and loyalty: one program per account and mode, the rewards catalog, one loyalty account
 * per customer (its balance columns change only together with a ledger entry, in one transaction),
 * grants (lots of points with their remaining points, availability and expiry), the append-only
 * ledger, redemptions and the admin actions taken on customers' loyalty accounts.
 */
export class Migration0060RewardsLedger extends Migration {
  override name = '0060-rewards-ledger';

  override up(): void {
    this.addSql(`
      create table loyalty_programs (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        earn_rules jsonb not null,
        return_window_days integer not null check (return_window_days >= 0),
        expiry_months integer null check (expiry_months > 0),
        tiers jsonb not null,
        downgrade_policy text not null check (downgrade_policy in ('anniversary', 'never')),
        max_tiers_down integer not null default 1 check (max_tiers_down >= 1),
        test_clock_time timestamptz null check (test_clock_time is null or livemode = false),
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (account_id, livemode)
      );

      create table loyalty_rewards (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        description text null,
        cost bigint not null check (cost > 0),
        expires date null,
        stock integer null check (stock >= 0),
        stock_remaining integer null check (stock_remaining >= 0),
        redeemed_count integer not null default 0,
        status text not null check (status in ('active', 'archived')),
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index loyalty_rewards_scope on loyalty_rewards (account_id, livemode, id desc);

      create table loyalty_accounts (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        points_balance bigint not null default 0 check (points_balance >= 0),
        pending_points bigint not null default 0 check (pending_points >= 0),
        shortfall_points bigint not null default 0 check (shortfall_points >= 0),
        lifetime_points bigint not null default 0,
        tier text not null,
        tier_reached_at timestamptz not null,
        tier_review_at timestamptz null,
        workflow_id text not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (account_id, livemode, customer_id)
      );

      create table loyalty_grants (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        source text not null check (source in ('award', 'order', 'adjustment')),
        base_points bigint not null check (base_points > 0),
        multiplier numeric(8, 4) not null,
        tier text not null,
        tier_multiplier numeric(8, 4) not null,
        points bigint not null check (points >= 0),
        remaining_points bigint not null check (remaining_points >= 0 and remaining_points <= points),
        reversed_points bigint not null default 0 check (reversed_points >= 0 and reversed_points <= points),
        status text not null check (status in ('pending', 'available', 'spent', 'expired', 'reversed')),
        reason text not null,
        order_id text null,
        payment_id text null,
        order_amount bigint null,
        currency text null,
        awarded_at timestamptz not null,
        available_at timestamptz not null,
        expires_at timestamptz null,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create unique index loyalty_grants_order_reason on loyalty_grants (account_id, livemode, order_id, reason) where order_id is not null;
      create unique index loyalty_grants_request_key on loyalty_grants (account_id, livemode, request_idempotency_key) where request_idempotency_key is not null;
      create index loyalty_grants_customer on loyalty_grants (account_id, livemode, customer_id, status, expires_at);
      create index loyalty_grants_payment on loyalty_grants (account_id, livemode, payment_id) where payment_id is not null;

      create table loyalty_redemptions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        reward_id text not null references loyalty_rewards (id),
        points_used bigint not null check (points_used > 0),
        code text not null unique,
        balance_after bigint not null,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create unique index loyalty_redemptions_request_key on loyalty_redemptions (account_id, livemode, request_idempotency_key) where request_idempotency_key is not null;
      create index loyalty_redemptions_customer on loyalty_redemptions (account_id, livemode, customer_id, id desc);

      create table loyalty_ledger_entries (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        type text not null check (type in ('grant', 'activation', 'redemption', 'expiry', 'reversal', 'adjustment')),
        points_change bigint not null,
        pending_change bigint not null,
        shortfall_change bigint not null,
        balance_after bigint not null,
        pending_after bigint not null,
        shortfall_after bigint not null,
        grant_id text null references loyalty_grants (id),
        redemption_id text null references loyalty_redemptions (id),
        order_id text null,
        reason text null,
        operator text null,
        allocations jsonb not null default '[]',
        effective_at timestamptz not null,
        created_at timestamptz not null default now()
      );
      create index loyalty_ledger_customer on loyalty_ledger_entries (account_id, livemode, customer_id, id desc);
      create index loyalty_ledger_earned on loyalty_ledger_entries (account_id, livemode, customer_id, effective_at) where type in ('grant', 'activation', 'reversal');

      create table loyalty_admin_actions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        customer_id text not null references customers (id),
        action text not null,
        operator text not null,
        reason text not null,
        result jsonb not null,
        created_at timestamptz not null default now()
      );
      create index loyalty_admin_actions_customer on loyalty_admin_actions (account_id, livemode, customer_id, id desc);
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists loyalty_admin_actions;
      drop table if exists loyalty_ledger_entries;
      drop table if exists loyalty_redemptions;
      drop table if exists loyalty_grants;
      drop table if exists loyalty_accounts;
      drop table if exists loyalty_rewards;
      drop table if exists loyalty_programs;
    `);
  }
}
