import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { areaSchedules } from '../domain/registry.ts';
import { HOUSEKEEPING_SCHEDULE_ID, HOUSEKEEPING_WORKFLOW_ID } from '../workflows/platform/shared.ts';

/**
 * Creates the platform's schedules and the areas' (their descriptors' `schedules`) if they do not
 * exist yet (safe to call from every replica). `taskQueue` is the platform's; an area's queue is
 * the same prefix with the area's name.
 */
export async function ensureSchedules(client: Client, taskQueue: string): Promise<void> {
  const prefix = taskQueue.slice(0, -'platform'.length);
  for (const { area, schedule } of areaSchedules) {
    try {
      await client.schedule.create({
        scheduleId: `${prefix}${schedule.id}`,
        spec: { intervals: [{ every: schedule.every as '1h' }] },
        action: { type: 'startWorkflow', workflowType: schedule.workflowType, workflowId: `${prefix}${schedule.workflowId}`, taskQueue: `${prefix}${area}`, args: schedule.args },
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
      });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
  }
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
