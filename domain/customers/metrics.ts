import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import { customerJourney } from './journey.ts';

/**
 * The customer metrics every event about a customer carries (`customer_metrics` in the webhook
 * payload and in GET /v3/events/{id}). Keep this signature stable: the event dispatcher calls it
 * once per event (with an EntityManager scoped to the event's account and mode) and stores the
 * result on the event, so every endpoint and every retry sees the same numbers.
 *
 * The numbers are those of GET /v3/customers/{id}/journey (domain/customers/journey.ts, where the
 * rules are written down): LTV in the currency of the customer's most recent paid order or invoice.
 */
export interface CustomerMetrics {
  /** Lifetime value: sum of what the customer paid, net of refunds, in decimal major units. */
  total_ltv: number;
  /** 0–100: how engaged the customer is (interactions, recency). */
  engagement_score: number;
  /** subscriber, lead, opportunity, customer, loyal or churned. */
  lifecycle_stage: string;
}

export async function customerMetrics(em: EntityManager, customerId: string): Promise<CustomerMetrics> {
  const journey = await customerJourney(em, customerId, { touchpointLimit: 0 }).catch((err: unknown) => {
    // A customer that no longer exists has no journey: report the empty one rather than hold the event.
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!journey) return { total_ltv: 0, engagement_score: 0, lifecycle_stage: 'subscriber' };
  return { total_ltv: journey.total_ltv, engagement_score: journey.engagement_score, lifecycle_stage: journey.lifecycle_stage };
}
