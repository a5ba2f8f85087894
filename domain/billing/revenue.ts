import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../scope.ts';

/**
 * What customers paid on invoices, per customer and currency: counted toward their lifetime value
 * by the CRM journey (`customer_metrics.total_ltv`). Many customers in one statement (the outbox
 * dispatcher computes the metrics of a whole pass at once).
 */
export async function paidInvoiceTotals(em: EntityManager, scope: Scope, customerIds: readonly string[], now: Date) {
  return em.execute<{ customer_id: string; currency: string; amount: string; n: number; n_year: number; last_ms: number }[]>(
    `select customer_id, currency, sum(amount_paid)::text as amount, count(*)::int as n,
            (count(*) filter (where paid_at >= ?::timestamptz - interval '365 days'))::int as n_year,
            (extract(epoch from max(paid_at)) * 1000)::float8 as last_ms
       from invoices where account_id = ? and livemode = ? and customer_id in (?) and status = 'paid' and amount_paid > 0
      group by customer_id, currency`,
    [now.toISOString(), scope.accountId, scope.livemode, customerIds],
  );
}
