import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../scope.ts';

/**
 * What a customer paid on invoices, per currency: counted toward their lifetime value by the CRM
 * journey (`customer_metrics.total_ltv`).
 */
export async function paidInvoiceTotals(em: EntityManager, scope: Scope, customerId: string, now: Date) {
  const rows = await em.execute<{ currency: string; amount: string; n: number; n_year: number; last_ms: number }[]>(
    `select currency, sum(amount_paid)::text as amount, count(*)::int as n,
            (count(*) filter (where paid_at >= ?::timestamptz - interval '365 days'))::int as n_year,
            (extract(epoch from max(paid_at)) * 1000)::float8 as last_ms
       from invoices where account_id = ? and livemode = ? and customer_id = ? and status = 'paid' and amount_paid > 0
      group by currency`,
    [now.toISOString(), scope.accountId, scope.livemode, customerId],
  );
  return rows.map((r) => ({ currency: r.currency, amount: Number(r.amount), count: r.n, countLastYear: r.n_year, lastAtMs: Number(r.last_ms) }));
}
