import { WorkflowNotFoundError } from '@temporalio/client';
import { deliveryWorkflowId } from '../../../workflows/webhooks/shared.ts';
import type { TestPlatform } from '../../support/platform.ts';
import { eventually } from './receiver.ts';

/**
 * Waits until the dispatcher has handled `eventId` (it sets `dispatched_at` only after making the
 * first attempt of every delivery it planned for the event, and starting the workflows of those to
 * retry), then tells whether it started the delivery of that event to `endpointId` (a delivery
 * record, or a delivery workflow): a "not sent" check that waits for the moment it would have been sent.
 */
export async function deliveryStarted(platform: TestPlatform, eventId: string, endpointId: string): Promise<boolean> {
  await eventually(async () => (await platform.sql('select 1 from events where id = $1 and dispatched_at is not null', [eventId])).length > 0);
  const records = await platform.sql('select 1 from webhook_deliveries where event_id = $1 and endpoint_id = $2', [eventId, endpointId]);
  if (records.length > 0) return true;
  try {
    await platform.temporal.client.workflow.getHandle(deliveryWorkflowId(eventId, endpointId)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
