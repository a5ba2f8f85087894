import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { nativePool } from '../../db/orm.ts';
import { newId } from '../../platform/ids.ts';
import type { Logger } from '../../platform/logger.ts';
import type { AttemptInput, AttemptResult } from '../../workflows/webhooks/shared.ts';
import { DomainEvent } from '../events/entities.ts';
import { recordEvent } from '../events/outbox.ts';
import { eventEnvelope } from '../events/service.ts';
import { scopedEm, type Scope } from '../scope.ts';
import type { Resolver } from './destination.ts';
import { WebhookDeliveryAttempt, WebhookDelivery, WebhookEndpoint } from './entities.ts';
import { nextRetryAt, type RetryPolicy } from './retry-schedule.ts';
import { sendWebhook, type SendResult } from './sender.ts';
import { endpointView } from './service.ts';
import { signatureHeaders } from './signing.ts';

export interface AttemptDeps {
  orm: MikroORM;
  timeoutMs: number;
  retry: RetryPolicy;
  allowPrivateNetworks: boolean;
  resolver?: Resolver;
  logger?: Logger;
  /** Called regularly while the receiver is being waited for (the activity's heartbeat). */
  heartbeat?: () => void;
  heartbeatEveryMs?: number;
  random?: () => number;
}

interface DeliveryRow {
  id: string;
  status: 'pending' | 'delivered' | 'failed';
  delivered_by: string | null;
  created_at: Date;
}

/**
 * One attempt of one delivery, as the delivery workflow's activity runs it:
 * 1. find (or create, once per event and endpoint) the delivery record;
 * 2. stop if the endpoint is gone or disabled, or if this delivery was already made (a second
 *    run, or this very attempt re-run after its worker died having recorded success);
 * 3. count the attempt, check the destination, sign with every live secret, post;
 * 4. record the attempt and its outcome, and the endpoint's state (410 disables it; a delivery
 *    failing for its whole window marks it failing; a success clears that), in one transaction;
 * 5. say when to try again (schedule, jitter, Retry-After, window), or that it is over.
 */
export async function runDeliveryAttempt(deps: AttemptDeps, input: AttemptInput): Promise<AttemptResult> {
  const scope: Scope = { accountId: input.accountId, livemode: input.livemode };
  const em = scopedEm(deps.orm, scope);
  const endpoint = await em.findOne(WebhookEndpoint, { id: input.endpointId });
  if (!endpoint) return { deliveryId: null, outcome: 'abandoned', delayMs: null };
  const event = await em.findOne(DomainEvent, { id: input.eventId });
  if (!event) {
    deps.logger?.error('webhook delivery for a missing event', { event_id: input.eventId, endpoint_id: input.endpointId });
    return { deliveryId: null, outcome: 'abandoned', delayMs: null };
  }

  const pool = await nativePool(deps.orm);
  const now = () => new Date();
  const { rows: [row] } = await pool.query<DeliveryRow>(
    `insert into webhook_deliveries (id, account_id, livemode, endpoint_id, event_id, event_type, workflow_id, test, status, attempts, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', 0, now(), now())
     on conflict (event_id, endpoint_id) do update set updated_at = excluded.updated_at
     returning id, status, delivered_by, created_at`,
    [newId('webhookDelivery'), scope.accountId, scope.livemode, endpoint.id, event.id, event.type, input.workflowId, input.kind === 'test'],
  );
  const delivery = row!;
  if (delivery.status === 'delivered' && (input.kind === 'event' || delivery.delivered_by === input.attemptKey)) {
    return { deliveryId: delivery.id, outcome: input.kind === 'event' && delivery.delivered_by !== input.attemptKey ? 'skipped' : 'delivered', delayMs: null };
  }
  if (!endpoint.enabled && input.kind !== 'test') {
    await em.nativeUpdate(WebhookDelivery, { id: delivery.id }, {
      status: delivery.status === 'delivered' ? 'delivered' : 'failed', nextRetryAt: null,
      lastError: endpoint.disabledReason === 'gone' ? 'endpoint disabled (its receiver answered 410 Gone)' : 'endpoint disabled',
    });
    return { deliveryId: delivery.id, outcome: 'abandoned', delayMs: null };
  }

  const { rows: [counted] } = await pool.query<{ attempts: number }>(
    `update webhook_deliveries set attempts = attempts + 1, updated_at = now() where id = $1 returning attempts`, [delivery.id]);
  const number = counted!.attempts;

  const body = JSON.stringify(eventEnvelope(event));
  const startedAt = now();
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > startedAt) secrets.push(endpoint.previousSecret);
  const headers = signatureHeaders(secrets, event.id, Math.floor(startedAt.getTime() / 1000), body);

  const beat = deps.heartbeat ? setInterval(deps.heartbeat, deps.heartbeatEveryMs ?? 1000) : undefined;
  let result: SendResult;
  try {
    result = await sendWebhook({
      url: endpoint.url, body, headers, timeoutMs: deps.timeoutMs,
      policy: { livemode: scope.livemode, allowPrivateNetworks: deps.allowPrivateNetworks },
      resolver: deps.resolver,
    });
  } finally {
    if (beat) clearInterval(beat);
  }

  const finished = now();
  const retryAt = result.outcome === 'delivered' || result.outcome === 'gone' || input.kind !== 'event'
    ? null
    : nextRetryAt({
      policy: deps.retry, retryIndex: input.retryIndex, firstAttemptAt: new Date(delivery.created_at), now: finished,
      retryAfterMs: result.retryAfterMs, random: (deps.random ?? Math.random)(),
    });

  await em.transactional(async (tx) => {
    await tx.insert(WebhookDeliveryAttempt, {
      deliveryId: delivery.id, accountId: scope.accountId, livemode: scope.livemode, number, startedAt,
      responseTimeMs: result.responseTimeMs, httpStatus: result.httpStatus, outcome: result.outcome,
      error: result.error, responseExcerpt: result.responseExcerpt, nextRetryAt: retryAt,
    });
    const delivered = result.outcome === 'delivered';
    await tx.nativeUpdate(WebhookDelivery, { id: delivery.id }, {
      status: delivered ? 'delivered' : 'failed',
      httpStatus: result.httpStatus,
      responseTimeMs: result.responseTimeMs,
      lastError: result.error,
      deliveredAt: delivered ? finished : null,
      nextRetryAt: retryAt,
      ...(delivered ? { deliveredBy: input.attemptKey } : {}),
    });
    if (delivered) await markSuccess(tx, endpoint.id, finished);
    else if (result.outcome === 'gone') await disableGone(tx, scope, endpoint.id, deps.logger);
    else if (!retryAt && input.kind === 'event') await markFailingIfNoSuccessSince(tx, scope, endpoint.id, new Date(delivery.created_at), finished, deps.logger);
  });

  if (result.outcome === 'delivered') return { deliveryId: delivery.id, outcome: 'delivered', delayMs: null };
  if (retryAt) return { deliveryId: delivery.id, outcome: 'retry', delayMs: Math.max(0, retryAt.getTime() - Date.now()) };
  return { deliveryId: delivery.id, outcome: 'failed', delayMs: null };
}

/** Cheap on the hot path: the row is written at most once a second (and whenever it was failing). */
async function markSuccess(tx: EntityManager, endpointId: string, at: Date): Promise<void> {
  await tx.nativeUpdate(WebhookEndpoint, {
    id: endpointId,
    $or: [{ failingSince: { $ne: null } }, { lastSuccessAt: null }, { lastSuccessAt: { $lt: new Date(at.getTime() - 1000) } }],
  }, { lastSuccessAt: at, failingSince: null });
}

async function disableGone(tx: EntityManager, scope: Scope, endpointId: string, logger?: Logger): Promise<void> {
  const changed = await tx.nativeUpdate(WebhookEndpoint, { id: endpointId, enabled: true }, { enabled: false, disabledReason: 'gone' });
  if (!changed) return;
  const endpoint = await tx.findOneOrFail(WebhookEndpoint, { id: endpointId }, { refresh: true });
  logger?.warn('webhook endpoint disabled: receiver answered 410 Gone', { endpoint_id: endpointId, account_id: scope.accountId });
  recordEvent(tx, scope, { type: 'webhook_endpoint.disabled', object: endpointView(endpoint) });
  await tx.flush();
}

/** Failing for the whole window: no success since this delivery's first attempt. Reported once, as an event and a log line. */
async function markFailingIfNoSuccessSince(tx: EntityManager, scope: Scope, endpointId: string, since: Date, at: Date, logger?: Logger): Promise<void> {
  const changed = await tx.nativeUpdate(WebhookEndpoint, {
    id: endpointId, failingSince: null, $or: [{ lastSuccessAt: null }, { lastSuccessAt: { $lt: since } }],
  }, { failingSince: at });
  if (!changed) return;
  const endpoint = await tx.findOneOrFail(WebhookEndpoint, { id: endpointId }, { refresh: true });
  logger?.warn('webhook endpoint failing: a delivery failed for its whole retry window', { endpoint_id: endpointId, account_id: scope.accountId, url: endpoint.url });
  recordEvent(tx, scope, { type: 'webhook_endpoint.failing', object: endpointView(endpoint) });
  await tx.flush();
}
