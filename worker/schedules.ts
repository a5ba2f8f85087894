import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { HOUSEKEEPING_SCHEDULE_ID, HOUSEKEEPING_WORKFLOW_ID } from '../workflows/platform/shared.ts';

/** Creates the platform's schedules if they do not exist yet (safe to call from every replica). */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.create({
      scheduleId: HOUSEKEEPING_SCHEDULE_ID,
      spec: { intervals: [{ every: '1h' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'housekeepingWorkflow',
        workflowId: HOUSEKEEPING_WORKFLOW_ID,
        taskQueue,
        args: [{ requestLogRetentionDays: 30 }],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
