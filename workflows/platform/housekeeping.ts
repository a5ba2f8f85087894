import { proxyActivities } from '@temporalio/workflow';
import type { PlatformActivities } from '../../activities/platform/index.ts';
import type { HousekeepingInput, HousekeepingResult } from './shared.ts';

const { purgeExpiredRecords } = proxyActivities<PlatformActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '5s', maximumAttempts: 5 },
});

/** Runs hourly on a Temporal Schedule: deletes what has outlived its retention. */
export async function housekeepingWorkflow(input: HousekeepingInput): Promise<HousekeepingResult> {
  return purgeExpiredRecords(input);
}
