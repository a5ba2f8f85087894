import type { EntityManager } from '@mikro-orm/postgresql';
import type { CustomerMetrics } from '../events/consumers.ts';
import { customerNumbers } from './journey.ts';

/** What a customer with no journey (no longer in the scope) reports, rather than holding the event. */
const EMPTY: CustomerMetrics = { total_ltv: 0, engagement_score: 0, lifecycle_stage: 'subscriber' };

/**
 * `customer_metrics` for events about customers: the numbers of GET /v3/customers/{id}/journey
 * (domain/crm/journey.ts, where the rules are written down), LTV in the currency of the customer's
 * most recent paid order or invoice. Many customers at once, one statement per source.
 */
export async function customerMetricsOf(em: EntityManager, customerIds: readonly string[]): Promise<Map<string, CustomerMetrics>> {
  const numbers = await customerNumbers(em, customerIds);
  return new Map(customerIds.map((id) => {
    const n = numbers.get(id);
    return [id, n ? { total_ltv: n.total_ltv, engagement_score: n.engagement_score, lifecycle_stage: n.lifecycle_stage } : EMPTY];
  }));
}
