import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { newId } from '../../platform/ids.ts';
import { deliveryWorkflowId, retryNowSignal, type DeliveryInput } from '../../workflows/webhooks/shared.ts';
import type { EventKind } from '../events/catalog.ts';
import { createTestEvent } from '../events/service.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import { deliverySearchAttributes } from './consumer.ts';
import { WebhookDelivery } from './entities.ts';
import { assertReplayable, deliveryView, findDelivery, getEndpoint, type DeliveryView } from './service.ts';

/** What the API needs to start delivery workflows. */
export interface DeliveryStarter {
  client: Client;
  /** The webhooks task queue. */
  taskQueue: string;
}

/**
 * POST /v3/webhooks/{id}/test: a test event (the catalog's example, or `test_data`) goes to this
 * one endpoint at once, in one attempt (not retried on the schedule; replay it by hand). The
 * delivery record is written with the event, before the workflow starts, so the caller always
 * gets one back; the answer waits for the attempt (at most `waitMs`).
 */
export async function sendTestEvent(
  em: EntityManager, scope: Scope, starter: DeliveryStarter, endpointId: string,
  input: { kind: EventKind; testData?: Record<string, unknown> }, requestId: string, waitMs: number,
): Promise<{ delivery: DeliveryView; finished: boolean }> {
  await getEndpoint(em, endpointId);
  const { event, delivery } = await em.transactional(async (tx) => {
    const event = await createTestEvent(tx, scope, input.kind, input.testData, requestId);
    const delivery = tx.create(WebhookDelivery, {
      id: newId('webhookDelivery'),
      ...scopeColumns(scope),
      endpointId,
      eventId: event.id,
      eventType: event.type,
      workflowId: deliveryWorkflowId(event.id, endpointId),
      test: true,
      status: 'pending',
      attempts: 0,
      httpStatus: null,
      responseTimeMs: null,
      lastError: null,
      deliveredAt: null,
      deliveredBy: null,
      nextRetryAt: null,
    });
    await tx.flush();
    return { event, delivery };
  });
  const workflowInput: DeliveryInput = { eventId: event.id, endpointId, accountId: scope.accountId, livemode: scope.livemode, kind: 'test' };
  const handle = await starter.client.workflow.start('webhookDeliveryWorkflow', {
    workflowId: delivery.workflowId,
    taskQueue: starter.taskQueue,
    args: [workflowInput],
    typedSearchAttributes: deliverySearchAttributes(workflowInput, null),
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
  });
  const finished = await waitFor(handle.result(), waitMs);
  em.clear();
  return { delivery: deliveryView(await findDelivery(em, endpointId, delivery.id)), finished };
}

async function waitFor(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * POST /v3/webhooks/{id}/deliveries/{delivery_id}/retry: signal-with-start on the delivery's
 * workflow id. A delivery still waiting for its next scheduled retry is tried at once (and keeps
 * its schedule if that attempt fails); a finished one (delivered, or given up) gets a new run
 * that makes one attempt, with the same `webhook-id`.
 */
export async function replayDelivery(em: EntityManager, scope: Scope, starter: DeliveryStarter, endpointId: string, deliveryId: string): Promise<DeliveryView> {
  const delivery = await assertReplayable(em, endpointId, deliveryId);
  const input: DeliveryInput = {
    eventId: delivery.eventId, endpointId, accountId: scope.accountId, livemode: scope.livemode, kind: delivery.test ? 'test' : 'manual',
  };
  await starter.client.workflow.signalWithStart('webhookDeliveryWorkflow', {
    workflowId: delivery.workflowId,
    taskQueue: starter.taskQueue,
    args: [input],
    signal: retryNowSignal,
    signalArgs: [],
    typedSearchAttributes: deliverySearchAttributes(input, null),
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  });
  return deliveryView(delivery);
}
