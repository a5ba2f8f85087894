import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The customer metrics every event about a customer carries (`customer_metrics` in the webhook
 * payload and in GET /v3/events/{id}). Keep this signature stable: the event dispatcher calls it
 * once per event (with an EntityManager scoped to the event's account and mode) and stores the
 * result on the event, so every endpoint and every retry sees the same numbers.
 *
 * The commerce/CRM area refines the computation with order and journey data; until then the values
 * are those of a customer with no recorded purchases or interactions.
 */
export interface CustomerMetrics {
  /** Lifetime value: sum of what the customer paid, net of refunds, in decimal major units. */
  total_ltv: number;
  /** 0–100: how engaged the customer is (interactions, recency). */
  engagement_score: number;
  /** lead, prospect, customer, … */
  lifecycle_stage: string;
}

export async function customerMetrics(_em: EntityManager, _customerId: string): Promise<CustomerMetrics> {
  return { total_ltv: 0, engagement_score: 0, lifecycle_stage: 'lead' };
}
