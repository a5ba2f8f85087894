import { Migration } from '@mikro-orm/migrations';

/**
 * Customer segments (domain/crm/segments.ts): saved rules, their members, and the per-customer
 * snapshot of the journey metrics (LTV, engagement, lifecycle) that the rules compare in SQL.
 */
export class Migration0080CrmSegments extends Migration {
  override name = '0080-crm-segments';

  override up(): void {
    this.addSql(`
      create table crm_segments (
        id text primary key,
        account_id text not null references accounts (id),
        livemode boolean not null,
        name text not null,
        description text null,
        rules jsonb not null,
        status text not null check (status in ('active', 'archived')),
        rules_version integer not null default 1,
        member_count integer not null default 0,
        last_evaluated_at timestamptz null,
        metadata jsonb not null default '{}',
        created_at timestamptz not null,
        updated_at timestamptz not null
      );
      create index crm_segments_scope on crm_segments (account_id, livemode, id desc);
      create index crm_segments_active on crm_segments (account_id, livemode) where status = 'active';

      create table crm_segment_members (
        segment_id text not null references crm_segments (id),
        customer_id text not null,
        account_id text not null,
        livemode boolean not null,
        entered_at timestamptz not null,
        primary key (segment_id, customer_id)
      );
      create index crm_segment_members_customer on crm_segment_members (account_id, livemode, customer_id);

      create table crm_customer_metrics (
        account_id text not null,
        livemode boolean not null,
        customer_id text not null,
        total_ltv numeric(20, 6) not null,
        engagement_score numeric(6, 1) not null,
        lifecycle_stage text not null,
        refreshed_at timestamptz not null,
        primary key (account_id, livemode, customer_id)
      );
      create index crm_customer_metrics_refreshed on crm_customer_metrics (account_id, livemode, refreshed_at);
    `);
  }

  override down(): void {
    this.addSql('drop table if exists crm_customer_metrics; drop table if exists crm_segment_members; drop table if exists crm_segments;');
  }
}
