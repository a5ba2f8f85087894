import type { SearchAttributePair } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import type { Config } from '../../platform/config.ts';
import { deliveryWorkflowId, WEBHOOKS_AREA, type AttemptInput, type AttemptResult, type DeliveryInput, type DeliveryResume } from '../../workflows/webhooks/shared.ts';
import { perPass, type EventConsumer, type FirstStepContext, type FirstStepOutcome, type OutboxEvent, type WorkflowStartRequest } from '../events/consumers.ts';
import { finishAttempt, prepareAttempts, recordAttempts, sendAttempt, type AttemptDeps, type SentAttempt } from './delivery.ts';
import { batcher, mapLimit } from '../../platform/concurrency.ts';
import { WebhookEndpoint } from './entities.ts';
import { retryPolicy, type RetryPolicy } from './retry-schedule.ts';

/** Enabled endpoints of one scope, read once per dispatcher pass. */
function enabledEndpoints(em: EntityManager): Promise<{ id: string; events: string[] }[]> {
  return perPass(em, 'webhooks:endpoints', async () =>
    (await em.find(WebhookEndpoint, { enabled: true }, { fields: ['id', 'events'], orderBy: { id: 'asc' } })).map((r) => ({ id: r.id, events: r.events })));
}

const policies = new WeakMap<Config, RetryPolicy>();

/**
 * The webhooks consumer of the outbox: one delivery per enabled endpoint subscribed to the event's
 * kind (or to `*`). An endpoint is not sent events about itself (`webhook_endpoint.failing` would
 * otherwise go to the very endpoint that is failing). The dispatcher makes the first attempt itself
 * (`firstSteps`); the delivery workflow is started only when it failed, for the retries.
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
  firstSteps: firstAttempts,
};

/** First attempts in flight at once per dispatcher pass (each an HTTP request; their records are written in batches). */
const FIRST_ATTEMPT_CONCURRENCY = 32;

/**
 * The deliveries' first attempts of a dispatcher pass, each bounded by
 * WEBHOOK_FIRST_ATTEMPT_TIMEOUT_MS (a slow receiver must not hold the outbox up for long). Every
 * event and endpoint is read, and every delivery record found or created, in one statement for
 * the whole pass (`prepareAttempts`); then each attempt is sent, and the answers are recorded in
 * batches (one statement for the attempts answered while the previous batch was written). Safe to
 * make again (the dispatcher died before it marked the event): an attempt finds its delivery
 * record by (event, endpoint) and sends nothing if it was delivered. Delivered, given up or
 * abandoned: nothing to start. To retry: the delivery workflow, resumed at the first retry.
 */
async function firstAttempts(requests: WorkflowStartRequest[], { services, heartbeat, dropped }: FirstStepContext): Promise<FirstStepOutcome[]> {
  const { config } = services;
  let retry = policies.get(config);
  if (!retry) policies.set(config, (retry = retryPolicy(config)));
  const deps: AttemptDeps = {
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
  };
  const inputs: AttemptInput[] = requests.map((request) => {
    const [input] = request.args as [DeliveryInput];
    return { ...input, retryIndex: 0, workflowId: request.workflowId, attemptKey: `${request.workflowId}:dispatch` };
  });
  const prepared = await prepareAttempts(deps, inputs);
  const record = batcher((sent: SentAttempt[]) => recordAttempts(deps, sent));
  const outcomes: FirstStepOutcome[] = [];
  await mapLimit(requests.map((_, i) => i), FIRST_ATTEMPT_CONCURRENCY, async (i) => {
    const request = requests[i]!;
    try {
      const ready = prepared[i]!;
      let result: AttemptResult;
      if ('outcome' in ready) result = ready;
      else if (dropped(request)) {
        outcomes[i] = { rest: null }; // another pass has the event now: it makes this attempt
        return;
      } else {
        const sent = await sendAttempt(deps, inputs[i]!, ready);
        await record(sent);
        result = await finishAttempt(deps, sent);
      }
      if (result.outcome !== 'retry') outcomes[i] = { rest: null };
      else {
        const resume: DeliveryResume = { retryIndex: 1, delayMs: result.delayMs ?? 0 };
        outcomes[i] = { rest: { ...request, args: [request.args[0], resume] } };
      }
    } catch (err) {
      outcomes[i] = { error: err };
    }
  });
  return outcomes;
}

export function deliverySearchAttributes(input: DeliveryInput, customerId: string | null): SearchAttributePair[] {
  return searchAttributes({ accountId: input.accountId, livemode: input.livemode, customerId, resourceId: input.endpointId });
}
