import { Migration } from '@mikro-orm/migrations';

/**
 * ERP: the general ledger (per account and mode: settings with the base currency, a chart of
 * accounts, exchange rates, financial transactions and their journal lines), projects, vendors and
 * procurement orders with their receipts and vendor bills, the admin action log, and the sandbox
 * vendor's own table (it plays an outside system, so its table is separate from ours).
 *
 * The database itself keeps the ledger honest: journal lines can be neither updated nor deleted,
 * each line is a debit or a credit (never both), and a deferred constraint trigger refuses to commit
 * a transaction whose lines do not balance to zero. A financial transaction can change only by
 * being reversed (its `status` and `reversed_by_id`); nothing else of it may change, and it cannot
 * be deleted.
 */
export class Migration0040Erp extends Migration {
  override name = '0040-erp';

  override up(): void {
    this.addSql(`
      create table erp_ledgers (
        account_id text not null references accounts (id),
        livemode boolean not null,
        base_currency text not null,
        default_tax_rate numeric(7, 4) not null default 0 check (default_tax_rate >= 0 and default_tax_rate < 100),
        single_approval_from bigint not null check (single_approval_from >= 0),
        dual_approval_from bigint not null check (dual_approval_from >= single_approval_from),
        escalation_hours integer not null default 48 check (escalation_hours between 1 and 8760),
        escalation_limit integer not null default 3 check (escalation_limit between 0 and 100),
        match_tolerance_percent numeric(5, 2) not null default 2 check (match_tolerance_percent >= 0 and match_tolerance_percent <= 50),
        created_at timestamptz not null,
        updated_at timestamptz not null,
        primary key (account_id, livemode)
      );

      create table ledger_accounts (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        code text not null,
        name text not null,
        type text not null check (type in ('asset', 'liability', 'equity', 'revenue', 'expense')),
        system boolean not null default false,
        description text null,
        created_at timestamptz not null,
        unique (account_id, livemode, code)
      );

      create table ledger_exchange_rates (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        currency text not null,
        rate numeric(30, 12) not null check (rate > 0),
        effective_date date not null,
        created_at timestamptz not null,
        unique (account_id, livemode, currency, effective_date)
      );

      create table financial_transactions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        type text not null check (type in ('revenue', 'expense', 'refund', 'transfer')),
        status text not null check (status in ('posted', 'reversed')),
        amount bigint not null check (amount > 0),
        currency text not null,
        base_currency text not null,
        base_amount bigint not null check (base_amount >= 0),
        exchange_rate numeric(30, 12) not null,
        account_code text not null,
        counter_account_code text not null,
        description text null,
        customer_id text null,
        project_id text null,
        tax_inclusive boolean not null,
        tax_rate numeric(7, 4) not null,
        net_amount bigint not null,
        tax_amount bigint not null,
        payment_terms text null,
        transaction_date date not null,
        due_date date null,
        discount_date date null,
        discount_percent numeric(5, 2) null,
        reversal_of_id text null references financial_transactions (id),
        reversed_by_id text null references financial_transactions (id),
        source_type text not null check (source_type in ('api', 'event', 'procurement', 'reversal')),
        source_id text null,
        source_event_id text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index financial_transactions_scope on financial_transactions (account_id, livemode, id desc);
      create index financial_transactions_date on financial_transactions (account_id, livemode, transaction_date);
      create unique index financial_transactions_event on financial_transactions (account_id, livemode, source_event_id)
        where source_event_id is not null;
      create unique index financial_transactions_one_reversal on financial_transactions (reversal_of_id) where reversal_of_id is not null;

      create table journal_lines (
        id bigserial primary key,
        account_id text not null,
        livemode boolean not null,
        transaction_id text not null references financial_transactions (id),
        line_no smallint not null,
        ledger_code text not null,
        debit bigint not null check (debit >= 0),
        credit bigint not null check (credit >= 0),
        customer_id text null,
        project_id text null,
        posted_on date not null,
        description text null,
        constraint journal_lines_one_side check ((debit = 0) <> (credit = 0)),
        unique (transaction_id, line_no)
      );
      create index journal_lines_code on journal_lines (account_id, livemode, ledger_code, posted_on);
      create index journal_lines_project on journal_lines (account_id, livemode, project_id) where project_id is not null;

      create function journal_lines_immutable() returns trigger language plpgsql as $$
      begin
        raise exception 'journal lines are immutable: post a reversal instead' using errcode = 'P0001';
      end $$;
      create trigger journal_lines_no_change before update or delete on journal_lines
        for each row execute function journal_lines_immutable();

      create function journal_lines_balanced() returns trigger language plpgsql as $$
      declare imbalance bigint;
      begin
        select coalesce(sum(debit), 0) - coalesce(sum(credit), 0) into imbalance from journal_lines where transaction_id = new.transaction_id;
        if imbalance <> 0 then
          raise exception 'journal entry % does not balance (debits - credits = %)', new.transaction_id, imbalance using errcode = 'P0001';
        end if;
        return null;
      end $$;
      create constraint trigger journal_lines_balance after insert on journal_lines
        deferrable initially deferred for each row execute function journal_lines_balanced();

      create function financial_transactions_immutable() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' then
          raise exception 'financial transactions cannot be deleted: post a reversal instead' using errcode = 'P0001';
        end if;
        if (to_jsonb(new) - 'status' - 'reversed_by_id') is distinct from (to_jsonb(old) - 'status' - 'reversed_by_id') then
          raise exception 'financial transactions are immutable: post a reversal instead' using errcode = 'P0001';
        end if;
        return new;
      end $$;
      create trigger financial_transactions_no_change before update or delete on financial_transactions
        for each row execute function financial_transactions_immutable();

      create table projects (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        description text null,
        customer_id text null,
        budget bigint not null check (budget >= 0),
        currency text not null,
        start_date date not null,
        end_date date not null,
        status text not null check (status in ('planned', 'in_progress', 'on_hold', 'completed', 'cancelled')),
        milestones jsonb not null default '[]',
        budget_exceeded_at timestamptz null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        check (end_date >= start_date)
      );
      create index projects_scope on projects (account_id, livemode, id desc);

      create table vendors (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        email text null,
        currency text not null,
        payment_terms text not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index vendors_scope on vendors (account_id, livemode, id desc);

      create table procurement_orders (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        vendor_id text not null references vendors (id),
        status text not null check (status in ('draft', 'pending_approval', 'approved', 'rejected', 'ordered', 'partially_received', 'received', 'closed', 'cancelled')),
        currency text not null,
        total bigint not null check (total > 0),
        base_total bigint not null check (base_total >= 0),
        items jsonb not null,
        approval_required boolean not null,
        warehouse_id text null,
        project_id text null,
        created_by text not null,
        approval jsonb not null,
        escalation_count integer not null default 0,
        next_escalation_at timestamptz null,
        vendor_reference text null,
        cancellation_reason text null,
        receipts jsonb not null default '[]',
        bill jsonb null,
        workflow_id text not null,
        test_clock_time timestamptz null,
        version integer not null default 0,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index procurement_orders_scope on procurement_orders (account_id, livemode, id desc);

      create table erp_admin_actions (
        id bigserial primary key,
        account_id text not null,
        livemode boolean not null,
        resource_id text not null,
        action text not null,
        operator text not null,
        reason text not null,
        details jsonb not null default '{}',
        created_at timestamptz not null default now()
      );
      create index erp_admin_actions_resource on erp_admin_actions (resource_id, id);

      create table sandbox_vendor_orders (
        idempotency_key text primary key,
        vendor_id text not null,
        purchase_order_id text not null,
        reference text null,
        status text not null check (status in ('acknowledged', 'rejected', 'unavailable')),
        attempts integer not null default 1,
        created_at timestamptz not null default now()
      );
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists sandbox_vendor_orders, erp_admin_actions, procurement_orders, vendors, projects, journal_lines,
        financial_transactions, ledger_exchange_rates, ledger_accounts, erp_ledgers;
      drop function if exists journal_lines_immutable, journal_lines_balanced, financial_transactions_immutable;
    `);
  }
}
