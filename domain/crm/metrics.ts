import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError } from '../../platform/errors.ts';
import type { CustomerMetrics } from '../events/consumers.ts';
import { customerJourney } from './journey.ts';

/**
 * `customer_metrics` for events about a customer: the numbers of GET /v3/customers/{id}/journey
 * (domain/crm/journey.ts, where the rules are written down), LTV in the currency of the customer's
 * most recent paid order or invoice.
 */
export async function customerMetrics(em: EntityManager, customerId: string): Promise<CustomerMetrics> {
  const journey = await customerJourney(em, customerId, { touchpointLimit: 0 }).catch((err: unknown) => {
    // A customer that no longer exists has no journey: report the empty one rather than hold the event.
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
  if (!journey) return { total_ltv: 0, engagement_score: 0, lifecycle_stage: 'subscriber' };
  return { total_ltv: journey.total_ltv, engagement_score: journey.engagement_score, lifecycle_stage: journey.lifecycle_stage };
}
