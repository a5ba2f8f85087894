import type { SearchAttributePair } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import { deliveryWorkflowId, WEBHOOKS_AREA, type DeliveryInput } from '../../workflows/webhooks/shared.ts';
import type { EventConsumer, OutboxEvent, WorkflowStartRequest } from '../events/consumers.ts';
import { WebhookEndpoint } from './entities.ts';

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

/**
 * The webhooks consumer of the outbox: one delivery workflow per enabled endpoint subscribed to
 * the event's kind (or to `*`). An endpoint is not sent events about itself
 * (`webhook_endpoint.failing` would otherwise go to the very endpoint that is failing).
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
};

export function deliverySearchAttributes(input: DeliveryInput, customerId: string | null): SearchAttributePair[] {
  return searchAttributes({ accountId: input.accountId, livemode: input.livemode, customerId, resourceId: input.endpointId });
}
