import { proxyActivities } from '@temporalio/workflow';
import type { CrmActivities } from '../../activities/crm/index.ts';
import type { CustomerSegmentsInput, SegmentEvaluationInput, SegmentEvaluationResult } from './shared.ts';

const acts = proxyActivities<CrmActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', maximumInterval: '1 minute', maximumAttempts: 10 },
});

/**
 * A full evaluation of one segment (on create, on new rules, on demand, nightly from the segment's
 * schedule): metric snapshots that are missing or older than `staleAfterMs` are refreshed first,
 * in batches (only when the rules read metrics), then membership is computed in one SQL pass.
 */
export async function segmentEvaluationWorkflow(input: SegmentEvaluationInput): Promise<SegmentEvaluationResult> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  let metricsRefreshed = 0;
  if (await acts.segmentUsesMetrics({ ...scope, segmentId: input.segmentId })) {
    let after: string | null = null;
    do {
      const batch: { refreshed: number; last: string | null } = await acts.refreshStaleMetrics({ ...scope, after, staleAfterMs: input.staleAfterMs });
      metricsRefreshed += batch.refreshed;
      after = batch.last;
    } while (after !== null);
  }
  const result = await acts.evaluateSegment({ ...scope, segmentId: input.segmentId });
  return { ...result, metricsRefreshed };
}

/** After an event about a customer: their metrics snapshot, then their membership of every active segment. */
export async function customerSegmentsWorkflow(input: CustomerSegmentsInput): Promise<{ entered: number; left: number }> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  await acts.refreshCustomerMetrics({ ...scope, customerId: input.customerId });
  return acts.evaluateCustomerSegments({ ...scope, customerId: input.customerId });
}
