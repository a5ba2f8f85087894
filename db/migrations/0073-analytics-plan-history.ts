import { Migration } from '@mikro-orm/migrations';

/**
 * The history of each subscription's price, so MRR movements see plan changes (expansion and
 * contraction within one subscription). Billing keeps only the current `plan_id`, and plans are
 * immutable (no price edits; no quantities), so a change of price is a change of `plan_id`.
 *
 * Recorded by a trigger on `subscriptions` (after insert, and after an update that changes
 * `plan_id`), in the same transaction as billing's own write: every path that changes a plan (the
 * subscription workflow's `changePlan` update writes the row through `saveSubscription`) is seen,
 * nothing is lost between a write and a consumer, and billing's code does not change. The change
 * takes effect at the row's `updated_at` (the workflow's time, test clocks included); the first
 * row of a subscription covers its whole life before the first change. Existing subscriptions get
 * one row with their current plan (what is known of their past).
 *
 * `analytics_subscription_mrr_segments` cuts each subscription's counting interval (view
 * `analytics_subscription_mrr`) at its changes: one row per price it had, with the interval it had it.
 */
export class Migration0073AnalyticsPlanHistory extends Migration {
  override name = '0073-analytics-plan-history';

  override up(): void {
    this.addSql(`
      create table analytics_subscription_plan_changes (
        id bigserial primary key,
        account_id text not null,
        livemode boolean not null,
        subscription_id text not null,
        customer_id text not null,
        plan_id text not null,
        currency text not null,
        monthly_amount numeric not null,
        effective_at timestamptz not null,
        recorded_at timestamptz not null default now()
      );
      create index analytics_plan_changes_subscription on analytics_subscription_plan_changes (account_id, livemode, subscription_id, effective_at, id);

      create function analytics_record_plan_change() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and old.plan_id is not distinct from new.plan_id then
          return null;
        end if;
        insert into analytics_subscription_plan_changes (account_id, livemode, subscription_id, customer_id, plan_id, currency, monthly_amount, effective_at)
        select new.account_id, new.livemode, new.id, new.customer_id, pl.id, pl.currency,
               case pl.interval when 'monthly' then pl.amount::numeric when 'quarterly' then pl.amount / 3.0 else pl.amount / 12.0 end,
               case when tg_op = 'INSERT' then new.created_at else new.updated_at end
          from billing_plans pl where pl.id = new.plan_id;
        return null;
      end $$;
      create trigger analytics_subscription_plan_history after insert or update of plan_id on subscriptions
        for each row execute function analytics_record_plan_change();

      insert into analytics_subscription_plan_changes (account_id, livemode, subscription_id, customer_id, plan_id, currency, monthly_amount, effective_at)
      select s.account_id, s.livemode, s.id, s.customer_id, pl.id, pl.currency,
             case pl.interval when 'monthly' then pl.amount::numeric when 'quarterly' then pl.amount / 3.0 else pl.amount / 12.0 end, s.created_at
        from subscriptions s join billing_plans pl on pl.id = s.plan_id;

      -- One row per price a subscription had, over the part of its counting interval it had it.
      -- A subscription without history (none after the backfill) keeps its current plan throughout.
      create view analytics_subscription_mrr_segments as
        select m.account_id, m.livemode, m.subscription_id, m.customer_id,
               coalesce(h.currency, m.currency) as currency, coalesce(h.monthly_amount, m.monthly_amount) as monthly_amount,
               greatest(m.starts_at, coalesce(h.from_at, '-infinity')) as starts_at,
               case when m.ends_at is null and h.next_at is null then null
                    else least(coalesce(m.ends_at, 'infinity'), coalesce(h.next_at, 'infinity')) end as ends_at
          from analytics_subscription_mrr m
          left join (
            select c.account_id, c.livemode, c.subscription_id, c.currency, c.monthly_amount,
                   case when row_number() over w = 1 then '-infinity'::timestamptz else c.effective_at end as from_at,
                   lead(c.effective_at) over w as next_at
              from analytics_subscription_plan_changes c
            window w as (partition by c.account_id, c.livemode, c.subscription_id order by c.effective_at, c.id)
          ) h on h.account_id = m.account_id and h.livemode = m.livemode and h.subscription_id = m.subscription_id
         where greatest(m.starts_at, coalesce(h.from_at, '-infinity')) < coalesce(least(coalesce(m.ends_at, 'infinity'), coalesce(h.next_at, 'infinity')), 'infinity');
    `);
  }

  override down(): void {
    this.addSql(`
      drop view if exists analytics_subscription_mrr_segments;
      drop trigger if exists analytics_subscription_plan_history on subscriptions;
      drop function if exists analytics_record_plan_change;
      drop table if exists analytics_subscription_plan_changes;
    `);
  }
}
