import type { SearchAttributePair } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import type { Config } from '../../platform/config.ts';
import { deliveryWorkflowId, WEBHOOKS_AREA, type DeliveryInput, type DeliveryResume } from '../../workflows/webhooks/shared.ts';
import type { EventConsumer, FirstStepContext, OutboxEvent, WorkflowStartRequest } from '../events/consumers.ts';
import { runDeliveryAttempt } from './delivery.ts';
import { WebhookEndpoint } from './entities.ts';
import { retryPolicy, type RetryPolicy } from './retry-schedule.ts';

/** Enabled endpoints of one scope, read once per dispatcher pass (the dispatcher forks one EntityManager per scope and pass). */
const endpointsByEm = new WeakMap<EntityManager, Promise<{ id: string; events: string[] }[]>>();

function enabledEndpoints(em: EntityManager): Promise<{ id: string; events: string[] }[]> {
  let found = endpointsByEm.get(em);
  if (!found) {
    found = em.find(WebhookEndpoint, { enabled: true }, { fields: ['id', 'events'], orderBy: { id: 'asc' } })
      .then((rows) => rows.map((r) => ({ id: r.id, events: r.events })));
    endpointsByEm.set(em, found);
  }
  return found;
}

const policies = new WeakMap<Config, RetryPolicy>();

/**
 * The webhooks consumer of the outbox: one delivery per enabled endpoint subscribed to the event's
 * kind (or to `*`). An endpoint is not sent events about itself (`webhook_endpoint.failing` would
 * otherwise go to the very endpoint that is failing). The dispatcher makes the first attempt itself
 * (`firstStep`); the delivery workflow is started only when it failed, for the retries.
 */
export const webhookConsumer: EventConsumer = {
  name: 'webhooks',
  async plan(event: OutboxEvent, em: EntityManager): Promise<WorkflowStartRequest[]> {
    const aboutEndpoint = event.type.startsWith('webhook_endpoint.') ? (event.data.object as { id?: string } | undefined)?.id : undefined;
    const endpoints = (await enabledEndpoints(em)).filter((e) => (e.events.includes('*') || e.events.includes(event.type)) && e.id !== aboutEndpoint);
    return endpoints.map((endpoint) => {
      const input: DeliveryInput = {
        eventId: event.id, endpointId: endpoint.id, accountId: event.accountId, livemode: event.livemode, kind: 'event',
      };
      return {
        workflowType: 'webhookDeliveryWorkflow',
        workflowId: deliveryWorkflowId(event.id, endpoint.id),
        area: WEBHOOKS_AREA,
        args: [input],
        searchAttributes: deliverySearchAttributes(input, event.customerId),
      };
    });
  },
  firstStep: firstAttempt,
};

/**
 * A delivery's first attempt, made in the dispatcher's pass, bounded by
 * WEBHOOK_FIRST_ATTEMPT_TIMEOUT_MS (a slow receiver must not hold the outbox up for long). Safe to
 * make again (the dispatcher died before it marked the event): the attempt finds the delivery
 * record by (event, endpoint) and sends nothing if it was delivered. Delivered, given up or
 * abandoned: nothing to start. To retry: the delivery workflow, resumed at the first retry.
 */
async function firstAttempt(request: WorkflowStartRequest, { services, heartbeat }: FirstStepContext): Promise<WorkflowStartRequest | null> {
  const [input] = request.args as [DeliveryInput];
  const { config } = services;
  let retry = policies.get(config);
  if (!retry) policies.set(config, (retry = retryPolicy(config)));
  const result = await runDeliveryAttempt({
    orm: services.orm,
    timeoutMs: Math.min(config.WEBHOOK_TIMEOUT_MS, config.WEBHOOK_FIRST_ATTEMPT_TIMEOUT_MS),
    retry,
    allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    resolver: services.webhookTransport?.resolver,
    ca: services.webhookTransport?.ca,
    allowAddresses: services.webhookTransport?.allowAddresses,
    logger: services.logger,
    heartbeat,
    heartbeatEveryMs: 1000,
  }, { ...input, retryIndex: 0, workflowId: request.workflowId, attemptKey: `${request.workflowId}:dispatch` });
  if (result.outcome !== 'retry') return null;
  const resume: DeliveryResume = { retryIndex: 1, delayMs: result.delayMs ?? 0 };
  return { ...request, args: [input, resume] };
}

export function deliverySearchAttributes(input: DeliveryInput, customerId: string | null): SearchAttributePair[] {
  return searchAttributes({ accountId: input.accountId, livemode: input.livemode, customerId, resourceId: input.endpointId });
}
