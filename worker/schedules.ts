import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { areaSchedules } from '../domain/registry.ts';
import { HOUSEKEEPING_SCHEDULE_ID, HOUSEKEEPING_WORKFLOW_ID } from '../workflows/platform/shared.ts';

/**
 * Creates the platform's schedules and the areas' (their descriptors' `schedules`) if they do not
 * exist yet (safe to call from every replica). `taskQueue` gives an area's queue (per-area or
 * single layout). Every schedule and workflow id carries TASK_QUEUE_PREFIX, so installations sharing
 * a Temporal namespace each get their own.
 */
export async function ensureSchedules(client: Client, prefix: string, taskQueue: (area: string) => string): Promise<void> {
  for (const { area, schedule } of areaSchedules) {
    try {
      await client.schedule.create({
        scheduleId: `${prefix}${schedule.id}`,
        spec: { intervals: [{ every: schedule.every as '1h' }] },
        action: { type: 'startWorkflow', workflowType: schedule.workflowType, workflowId: `${prefix}${schedule.workflowId}`, taskQueue: taskQueue(area), args: schedule.args },
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
      });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
  }
  try {
    await client.schedule.create({
      scheduleId: `${prefix}${HOUSEKEEPING_SCHEDULE_ID}`,
      spec: { intervals: [{ every: '1h' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'housekeepingWorkflow',
        workflowId: `${prefix}${HOUSEKEEPING_WORKFLOW_ID}`,
        taskQueue: taskQueue('platform'),
        args: [{ requestLogRetentionDays: 30 }],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}

/** The ids of the schedules ensureSchedules creates under `prefix` (the bench deletes its own). */
export function scheduleIds(prefix: string): string[] {
  return [...areaSchedules.map(({ schedule }) => `${prefix}${schedule.id}`), `${prefix}${HOUSEKEEPING_SCHEDULE_ID}`];
}
