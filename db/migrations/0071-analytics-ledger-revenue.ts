import { Migration } from '@mikro-orm/migrations';

/**
 * Analytics reads revenue from the ERP ledger once ERP has posted it (docs/analytics.md, "Revenue
 * from the ledger"). `analytics_revenue_entries` is replaced (same columns, plus `basis`):
 *
 * - a paid invoice whose `invoice.paid` the ledger posted counts the ledger's amount and currency;
 *   a one-time card charge whose `payment.succeeded` it posted likewise; both keep the source's
 *   instant of receipt (`paid_at`, `created_at`), so the rollup never holds an entry at one instant
 *   and the live tail the same entry at another;
 * - a refund counts as posted when the ledger's refund postings for its payment (ERP posts the
 *   cumulative increments of `amount_refunded`) cover it, oldest refund first;
 * - a reversal of one of those postings (ERP's only way to undo an entry) subtracts the posting at
 *   the reversal's own instant (`source` = `reversal`);
 * - anything the ledger has not posted (before the ledger started, or while the posting workflow
 *   is still running) counts from the source tables as before (`basis` = `source`).
 *
 * Marketplace splits stay on the source: the ledger books the whole charge to clearing, but only
 * the platform fee is revenue, and the ledger has no entry for the fee.
 */
export class Migration0071AnalyticsLedgerRevenue extends Migration {
  override name = '0071-analytics-ledger-revenue';

  override up(): void {
    this.addSql(`
      create index analytics_ledger_event_source on financial_transactions (account_id, livemode, source_id, type) where source_type = 'event';
      create index analytics_ledger_reversals on financial_transactions (account_id, livemode, created_at) where source_type = 'reversal';

      create or replace view analytics_revenue_entries as
        select i.account_id, i.livemode, i.paid_at as at, coalesce(ft.currency, i.currency) as currency, 'subscriptions'::text as stream,
               'invoice'::text as source, i.id as source_id, i.customer_id, coalesce(ft.amount, i.amount_paid)::bigint as amount,
               case when ft.amount is null then 'source' else 'ledger' end::text as basis
          from invoices i
          left join lateral (
            select f.amount, f.currency from financial_transactions f
             where f.account_id = i.account_id and f.livemode = i.livemode and f.source_type = 'event' and f.source_id = i.id and f.type = 'revenue'
             order by f.created_at, f.id limit 1) ft on true
         where i.status = 'paid' and i.paid_at is not null and i.amount_paid > 0
        union all
        select p.account_id, p.livemode, p.created_at, coalesce(ft.currency, p.currency), 'one_time', 'payment', p.id, p.customer_id,
               case when p.kind = 'marketplace_split' then coalesce(p.platform_fee, 0) else coalesce(ft.amount, p.amount) end,
               case when ft.amount is null then 'source' else 'ledger' end
          from payments p
          left join lateral (
            select f.amount, f.currency from financial_transactions f
             where p.kind = 'charge' and f.account_id = p.account_id and f.livemode = p.livemode and f.source_type = 'event'
               and f.source_id = p.id and f.type = 'transfer'
             order by f.created_at, f.id limit 1) ft on true
         where p.status in ('succeeded', 'partially_refunded', 'refunded')
           and (p.kind = 'charge' or p.split_status = 'completed')
           and p.funding = 'card'
           and not exists (select 1 from invoice_collection_attempts a where a.payment_id = p.id)
        union all
        select r.account_id, r.livemode, r.created_at, r.currency,
               case when exists (select 1 from invoice_collection_attempts a where a.payment_id = r.payment_id) then 'subscriptions' else 'one_time' end,
               'refund', r.id, p.customer_id, -r.amount,
               case when coalesce((select sum(f.amount) from financial_transactions f
                                    where f.account_id = r.account_id and f.livemode = r.livemode and f.source_type = 'event'
                                      and f.source_id = r.payment_id and f.type = 'refund'), 0)
                         >= (select sum(r2.amount) from payment_refunds r2
                              where r2.payment_id = r.payment_id and r2.status = 'succeeded' and (r2.created_at, r2.id) <= (r.created_at, r.id))
                    then 'ledger' else 'source' end
          from payment_refunds r join payments p on p.id = r.payment_id
         where r.status = 'succeeded' and p.kind = 'charge'
        union all
        select rv.account_id, rv.livemode, rv.created_at, o.currency,
               case when o.type = 'revenue' or exists (select 1 from invoice_collection_attempts a where a.payment_id = o.source_id)
                    then 'subscriptions' else 'one_time' end,
               'reversal', rv.id, o.customer_id, case when o.type = 'refund' then o.amount else -o.amount end, 'ledger'
          from financial_transactions rv
          join financial_transactions o on o.id = rv.reversal_of_id
         where rv.source_type = 'reversal' and o.source_type = 'event'
           and (o.type = 'revenue' and exists (select 1 from invoices i where i.id = o.source_id and i.status = 'paid' and i.amount_paid > 0)
             or o.type = 'transfer' and exists (
                  select 1 from payments p where p.id = o.source_id and p.kind = 'charge' and p.funding = 'card'
                     and p.status in ('succeeded', 'partially_refunded', 'refunded')
                     and not exists (select 1 from invoice_collection_attempts a where a.payment_id = p.id))
             or o.type = 'refund' and exists (select 1 from payments p where p.id = o.source_id and p.kind = 'charge'));
    `);
  }

  /** Back to 0070's view (sources only); `basis` cannot be dropped by `create or replace`, so the view is recreated. */
  override down(): void {
    this.addSql(`
      drop view analytics_revenue_entries;
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
      drop index if exists analytics_ledger_event_source, analytics_ledger_reversals;
    `);
  }
}
