import { Migration } from '@mikro-orm/migrations';

/**
 * Dashboard users (domain/identity): people who sign in with email and password, members of one or
 * more accounts with a role; their sessions (only the SHA-256 of the cookie token is stored); and
 * the login throttle's counters, shared by every API process.
 */
export class Migration0090IdentityUsersSessions extends Migration {
  override name = '0090-identity-users-sessions';

  override up(): void {
    this.addSql(`
      create table dashboard_users (
        id text primary key,
        email text not null,
        password_hash text not null,
        created_at timestamptz not null default now()
      );
      create unique index dashboard_users_email on dashboard_users (lower(email));

      create table account_members (
        account_id text not null references accounts (id) on delete cascade,
        user_id text not null references dashboard_users (id) on delete cascade,
        role text not null check (role in ('owner', 'admin', 'developer', 'viewer')),
        created_at timestamptz not null default now(),
        primary key (account_id, user_id)
      );
      create index account_members_user on account_members (user_id);

      create table dashboard_sessions (
        id text primary key,
        token_hash bytea not null unique,
        user_id text not null references dashboard_users (id) on delete cascade,
        account_id text not null references accounts (id) on delete cascade,
        csrf_token text not null,
        created_at timestamptz not null default now(),
        last_seen_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz null,
        ip text null,
        user_agent text null
      );
      create index dashboard_sessions_user on dashboard_sessions (user_id, account_id);

      create table login_throttle (
        bucket text primary key,
        window_start timestamptz not null,
        failures integer not null
      );
    `);
  }

  override down(): void {
    this.addSql(`
      drop table if exists login_throttle;
      drop table if exists dashboard_sessions;
      drop table if exists account_members;
      drop table if exists dashboard_users;
    `);
  }
}
