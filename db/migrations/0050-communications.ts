import { Migration } from '@mikro-orm/migrations';

/**
 * Communications: phone numbers, the account's regulatory address, calls and their legs, per-account
 * call rates, PBXs and their extensions, messaging-app messages (and the inbound ones that open a
 * service window), operators' admin actions, and the sandbox telephony carrier's own ledger (it plays
 * an external carrier, so its tables are separate from ours).
 */
export class Migration0050Communications extends Migration {
  override name = '0050-communications';

  override up(): void {
    this.addSql(`
      create table comm_phone_numbers (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        number text not null check (number ~ '^\\+[1-9][0-9]{6,14}$'),
        number_type text not null check (number_type in ('local', 'toll_free', 'international')),
        country text not null,
        area_code text null,
        features jsonb not null,
        monthly_cost bigint not null check (monthly_cost >= 0),
        currency text not null,
        status text not null check (status in ('active', 'released')),
        inbound_secret text not null,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        released_at timestamptz null
      );
      create index comm_phone_numbers_scope on comm_phone_numbers (account_id, livemode, id desc);
      create unique index comm_phone_numbers_active on comm_phone_numbers (livemode, number) where status = 'active';
      create unique index comm_phone_numbers_request on comm_phone_numbers (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table comm_addresses (
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        line1 text not null,
        city text not null,
        postal_code text not null,
        country text not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        primary key (account_id, livemode)
      );

      create table comm_call_rates (
        account_id text not null references accounts (id),
        livemode boolean not null,
        country text not null,
        per_minute bigint not null check (per_minute >= 0),
        currency text not null,
        updated_at timestamptz not null,
        primary key (account_id, livemode, country)
      );

      create table comm_calls (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        to_number text not null,
        from_number text not null,
        caller_id_name text null,
        record_call boolean not null,
        ring_timeout integer not null check (ring_timeout between 5 and 120),
        fallback_number text null,
        status text not null check (status in ('queued', 'initiated', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled')),
        destination_country text not null,
        duration integer not null default 0 check (duration >= 0),
        billed_minutes integer not null default 0 check (billed_minutes >= 0),
        cost bigint not null default 0 check (cost >= 0),
        rate_per_minute bigint not null,
        currency text not null,
        mos numeric(3, 2) null,
        jitter_ms numeric(8, 2) null,
        packet_loss numeric(6, 3) null,
        latency_ms numeric(8, 2) null,
        recording_status text null check (recording_status in ('pending', 'ready', 'absent')),
        recording_duration integer null,
        failure_code text null,
        failure_message text null,
        answered_at timestamptz null,
        ended_at timestamptz null,
        workflow_id text not null,
        request_idempotency_key text null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index comm_calls_scope on comm_calls (account_id, livemode, id desc);
      create index comm_calls_created on comm_calls (account_id, livemode, created_at);
      create unique index comm_calls_request on comm_calls (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table comm_call_legs (
        id text primary key,
        call_id text not null references comm_calls (id),
        position smallint not null,
        role text not null check (role in ('primary', 'fallback')),
        to_number text not null,
        status text not null check (status in ('queued', 'initiated', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled')),
        carrier_call_id text null,
        duration integer not null default 0,
        answered_at timestamptz null,
        ended_at timestamptz null,
        created_at timestamptz not null,
        unique (call_id, position)
      );

      create table comm_pbxs (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null
      );
      create index comm_pbxs_scope on comm_pbxs (account_id, livemode, id desc);

      create table comm_pbx_extensions (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        pbx_id text not null references comm_pbxs (id),
        extension text not null check (extension ~ '^[0-9]{3,6}$'),
        user_id text null,
        status text not null check (status in ('available', 'busy', 'dnd', 'offline')),
        forwarding_enabled boolean not null,
        forwarding_destination text null,
        voicemail_enabled boolean not null,
        voicemail_greeting text null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (pbx_id, extension)
      );
      create index comm_pbx_extensions_list on comm_pbx_extensions (pbx_id, extension);

      create table comm_messages (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        app text not null check (app in ('whatsapp', 'sms', 'messenger')),
        to_address text not null,
        from_number text not null,
        text text null,
        template jsonb null,
        media_url text null,
        status text not null check (status in ('accepted', 'sent', 'delivered', 'read', 'failed')),
        provider_message_id text null,
        failure_code text null,
        failure_message text null,
        workflow_id text not null,
        request_idempotency_key text null,
        sent_at timestamptz null,
        delivered_at timestamptz null,
        read_at timestamptz null,
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index comm_messages_scope on comm_messages (account_id, livemode, id desc);
      create unique index comm_messages_request on comm_messages (account_id, livemode, request_idempotency_key)
        where request_idempotency_key is not null;

      create table comm_inbound_messages (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        app text not null,
        from_address text not null,
        to_number text not null,
        text text null,
        received_at timestamptz not null,
        created_at timestamptz not null
      );
      create index comm_inbound_window on comm_inbound_messages (account_id, livemode, app, from_address, to_number, received_at desc);

      create table comm_admin_actions (
        id text primary key,
        account_id text not null,
        livemode boolean not null,
        target_id text not null,
        action text not null,
        operator text not null,
        reason text not null,
        created_at timestamptz not null
      );
      create index comm_admin_actions_target on comm_admin_actions (target_id, created_at);

      create table sandbox_telephony_calls (
        carrier_call_id text primary key,
        idempotency_key text not null unique,
        to_number text not null,
        from_number text not null,
        scenario text not null,
        second_ms integer not null,
        ring_timeout integer not null,
        record boolean not null,
        placed_at timestamptz not null,
        hung_up_at timestamptz null,
        attempts integer not null default 1
      );
    `);
  }

  override down(): void {
    this.addSql(`drop table if exists sandbox_telephony_calls, comm_admin_actions, comm_inbound_messages, comm_messages,
      comm_pbx_extensions, comm_pbxs, comm_call_legs, comm_calls, comm_call_rates, comm_addresses, comm_phone_numbers`);
  }
}
