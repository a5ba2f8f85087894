import { Client, Connection } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { expect, inject, it } from 'vitest';
import { taskQueueName } from '../../platform/temporal.ts';
import { ensureSchedules, scheduleIds } from '../../worker/schedules.ts';

// Installations that share a Temporal namespace (TASK_QUEUE_PREFIX) each get their own schedules,
// every one on a queue of the installation's layout.
it('creates every schedule once under the prefix, starting workflows on the layout\'s queues', async () => {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const prefix = `sched-${randomBytes(4).toString('hex')}-`;
  const ids = scheduleIds(prefix);
  try {
    await ensureSchedules(client, prefix, (area) => taskQueueName(prefix, area, 'single'));
    await ensureSchedules(client, prefix, (area) => taskQueueName(prefix, area, 'single')); // every replica calls it
    expect(ids.length).toBeGreaterThan(1);
    for (const id of ids) {
      expect(id.startsWith(prefix)).toBe(true);
      const { action } = await client.schedule.getHandle(id).describe();
      expect(action.type).toBe('startWorkflow');
      if (action.type !== 'startWorkflow') continue;
      expect(action.taskQueue).toBe(`${prefix}all`);
      expect(action.workflowId.startsWith(prefix)).toBe(true);
    }
  } finally {
    for (const id of ids) await client.schedule.getHandle(id).delete().catch(() => undefined);
    await connection.close();
  }
});
