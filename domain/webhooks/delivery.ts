import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { nativePool } from '../../db/pool.ts';
import { newId } from '../../platform/ids.ts';
import type { Logger } from '../../platform/logger.ts';
import type { AttemptInput, AttemptResult } from '../../workflows/webhooks/shared.ts';
import { recordEvent } from '../events/outbox.ts';
import { eventEnvelope } from '../events/service.ts';
import { scopedEm, type Scope } from '../scope.ts';
import type { CustomerMetrics } from '../events/consumers.ts';
import type { Resolver } from './destination.ts';
import { WebhookEndpoint } from './entities.ts';
import { nextRetryAt, type RetryPolicy } from './retry-schedule.ts';
import { sendWebhook, type SendResult } from './sender.ts';
import { endpointView } from './service.ts';
import { signatureHeaders } from './signing.ts';
import { webhookAttempts, webhookLag } from '../../platform/metrics.ts';

export interface AttemptDeps {
  orm: MikroORM;
  timeoutMs: number;
  retry: RetryPolicy;
  allowPrivateNetworks: boolean;
  resolver?: Resolver;
  /** Test hooks (see WebhookTransport): CAs trusted for TLS, addresses allowed whatever their class. */
  ca?: string | Buffer;
  allowAddresses?: readonly string[];
  logger?: Logger;
  /** Called regularly while the receiver is being waited for (the activity's heartbeat). */
  heartbeat?: () => void;
  heartbeatEveryMs?: number;
  random?: () => number;
}

interface TargetRow {
  event_id: string | null;
  type: string;
  data: Record<string, unknown>;
  customer_metrics: CustomerMetrics | null;
  event_created_at: Date;
  endpoint_id: string | null;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  enabled: boolean;
  disabled_reason: 'gone' | null;
}

interface DeliveryRow {
  id: string;
  status: 'pending' | 'delivered' | 'failed';
  delivered_by: string | null;
  attempts: number;
  created_at: Date;
}

/**
 * One attempt of one delivery, as the delivery workflow's activity runs it:
 * 1. read the event and the endpoint; stop if the endpoint is gone or disabled;
 * 2. find (or create, once per event and endpoint) the delivery record and count the attempt —
 *    unless this delivery was already made (a second run of the same delivery, or this very
 *    attempt re-run after its worker died having recorded success): then nothing is sent;
 * 3. check the destination, sign with every live secret, post;
 * 4. record the attempt and its outcome, and the endpoint's state (410 disables it; a delivery
 *    failing for its whole window marks it failing; a success clears that);
 * 5. say when to try again (schedule, jitter, Retry-After, window), or that it is over.
 *
 * The common path is three statements of plain SQL (it runs for every delivery), each confined to
 * the delivery's account and mode by its own conditions; the rare changes of an endpoint's state,
 * which record events, go through the ORM in a transaction.
 */
export async function runDeliveryAttempt(deps: AttemptDeps, input: AttemptInput): Promise<AttemptResult> {
  const [prepared] = await prepareAttempts(deps, [input]);
  return 'outcome' in prepared! ? prepared : completeAttempt(deps, input, prepared!);
}

/** A delivery about to be sent: what `prepareAttempts` read and counted. */
export interface PreparedAttempt {
  target: TargetRow;
  delivery: DeliveryRow;
}

/**
 * Steps 1 and 2 for many attempts at once (the dispatcher's first attempts of a whole pass): one
 * statement reads every event and endpoint, one finds or creates every delivery record and counts
 * its attempt; only the rare disabled endpoint costs one more statement. Each answer is either the
 * attempt's result (nothing to send) or what `completeAttempt` sends. Inputs name distinct
 * (event, endpoint) pairs.
 */
export async function prepareAttempts(deps: AttemptDeps, inputs: readonly AttemptInput[]): Promise<(AttemptResult | PreparedAttempt)[]> {
  const pool = await nativePool(deps.orm);
  const { rows: targets } = await pool.query<TargetRow & { ord: string }>(
    `select i.ord, e.id as event_id, e.type, e.data, e.customer_metrics, e.created_at as event_created_at,
            w.id as endpoint_id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.enabled, w.disabled_reason
       from unnest($1::text[], $2::text[], $3::text[], $4::boolean[]) with ordinality as i(event_id, endpoint_id, account_id, livemode, ord)
       left join events e on e.id = i.event_id and e.account_id = i.account_id and e.livemode = i.livemode
       left join webhook_endpoints w on w.id = i.endpoint_id and w.account_id = i.account_id and w.livemode = i.livemode`,
    [inputs.map((i) => i.eventId), inputs.map((i) => i.endpointId), inputs.map((i) => i.accountId), inputs.map((i) => i.livemode)],
  );
  const answers: (AttemptResult | PreparedAttempt | TargetRow)[] = inputs.map(() => ({ deliveryId: null, outcome: 'abandoned', delayMs: null }));
  for (const { ord, ...target } of targets) answers[Number(ord) - 1] = target;

  const toCount: number[] = [];
  await Promise.all(inputs.map(async (input, i) => {
    const target = answers[i] as TargetRow;
    if (!('endpoint_id' in target) || !target.endpoint_id) {
      answers[i] = { deliveryId: null, outcome: 'abandoned', delayMs: null };
    } else if (!target.event_id) {
      deps.logger?.error('webhook delivery for a missing event', { event_id: input.eventId, endpoint_id: input.endpointId });
      answers[i] = { deliveryId: null, outcome: 'abandoned', delayMs: null };
    } else if (!target.enabled && input.kind !== 'test') {
      const { rows: [abandoned] } = await pool.query<{ id: string }>(
        `update webhook_deliveries set status = case when status = 'delivered' then status else 'failed' end, next_retry_at = null,
                last_error = $3, updated_at = now()
          where event_id = $1 and endpoint_id = $2 returning id`,
        [input.eventId, input.endpointId, target.disabled_reason === 'gone' ? 'endpoint disabled (its receiver answered 410 Gone)' : 'endpoint disabled'],
      );
      answers[i] = { deliveryId: abandoned?.id ?? null, outcome: 'abandoned', delayMs: null };
    } else {
      toCount.push(i);
    }
  }));
  if (!toCount.length) return answers as (AttemptResult | PreparedAttempt)[];

  // Counts each attempt, except when the delivery was already made (see 2. above).
  const col = <T>(f: (input: AttemptInput, target: TargetRow) => T) => toCount.map((i) => f(inputs[i]!, answers[i] as TargetRow));
  const kind = inputs[0]!.kind;
  if (inputs.some((i) => i.kind !== kind)) throw new Error('prepareAttempts: one kind of delivery per call');
  const { rows: counted } = await pool.query<DeliveryRow & { event_id: string; endpoint_id: string; already: boolean }>(
    `insert into webhook_deliveries as d (id, account_id, livemode, endpoint_id, event_id, event_type, workflow_id, test, status, attempts, created_at, updated_at)
     select v.id, v.account_id, v.livemode, v.endpoint_id, v.event_id, v.event_type, v.workflow_id, v.test, 'pending', 1, now(), now()
       from unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[])
            as v(id, account_id, livemode, endpoint_id, event_id, event_type, workflow_id, test)
      order by v.event_id, v.endpoint_id
     on conflict (event_id, endpoint_id) do update set
       attempts = d.attempts + case when d.status = 'delivered' and ($10 = 'event' or d.delivered_by = any($9::text[])) then 0 else 1 end,
       updated_at = now()
     returning id, event_id, endpoint_id, status, delivered_by, attempts, created_at,
               (status = 'delivered' and ($10 = 'event' or delivered_by = any($9::text[]))) as already`,
    [col(() => newId('webhookDelivery')), col((i) => i.accountId), col((i) => i.livemode), col((i) => i.endpointId), col((i) => i.eventId),
      col((_, t) => t.type), col((i) => i.workflowId), col((i) => i.kind === 'test'), col((i) => i.attemptKey), kind],
  );
  const byPair = new Map(counted.map((row) => [`${row.event_id} ${row.endpoint_id}`, row]));
  for (const i of toCount) {
    const input = inputs[i]!;
    const delivery = byPair.get(`${input.eventId} ${input.endpointId}`)!;
    if (delivery.already) {
      answers[i] = { deliveryId: delivery.id, outcome: delivery.delivered_by === input.attemptKey ? 'delivered' : 'skipped', delayMs: null };
    } else {
      answers[i] = { target: answers[i] as TargetRow, delivery };
    }
  }
  return answers as (AttemptResult | PreparedAttempt)[];
}

/** Steps 3 to 5 of one attempt that `prepareAttempts` counted: sign, send, record, say what next. */
export async function completeAttempt(deps: AttemptDeps, input: AttemptInput, prepared: PreparedAttempt): Promise<AttemptResult> {
  const sent = await sendAttempt(deps, input, prepared);
  await recordAttempts(deps, [sent]);
  return finishAttempt(deps, sent);
}

/** An attempt that has its answer, to be recorded. */
export interface SentAttempt {
  input: AttemptInput;
  prepared: PreparedAttempt;
  result: SendResult;
  startedAt: Date;
  finished: Date;
  retryAt: Date | null;
}

/** Step 3, and when to try again: signs with every live secret and posts. */
export async function sendAttempt(deps: AttemptDeps, input: AttemptInput, prepared: PreparedAttempt): Promise<SentAttempt> {
  const { target, delivery } = prepared;
  const eventId = target.event_id!;
  const envelope = eventEnvelope({
    id: eventId, type: target.type, livemode: input.livemode, data: target.data,
    customerMetrics: target.customer_metrics, createdAt: new Date(target.event_created_at),
  });
  const body = JSON.stringify(envelope);
  const startedAt = new Date();
  const secrets = [target.secret];
  if (target.previous_secret && target.previous_secret_expires_at && new Date(target.previous_secret_expires_at) > startedAt) secrets.push(target.previous_secret);
  const headers = signatureHeaders(secrets, eventId, Math.floor(startedAt.getTime() / 1000), body);

  const beat = deps.heartbeat ? setInterval(deps.heartbeat, deps.heartbeatEveryMs ?? 1000) : undefined;
  let result: SendResult;
  try {
    result = await sendWebhook({
      url: target.url, body, headers, timeoutMs: deps.timeoutMs,
      policy: { livemode: input.livemode, allowPrivateNetworks: deps.allowPrivateNetworks, allowAddresses: deps.allowAddresses },
      resolver: deps.resolver, ca: deps.ca,
    });
  } finally {
    if (beat) clearInterval(beat);
  }

  const finished = new Date();
  const retryAt = result.outcome === 'delivered' || result.outcome === 'gone' || input.kind !== 'event'
    ? null
    : nextRetryAt({
      policy: deps.retry, retryIndex: input.retryIndex, firstAttemptAt: new Date(delivery.created_at), now: finished,
      retryAfterMs: result.retryAfterMs, random: (deps.random ?? Math.random)(),
    });
  return { input, prepared, result, startedAt, finished, retryAt };
}

/**
 * Step 4's common part for many attempts in one statement: each attempt, its delivery, and (on
 * success, at most once a second) its endpoint. The endpoints are locked in id order, so batches
 * recorded at the same time never deadlock on them.
 */
export async function recordAttempts(deps: AttemptDeps, sent: readonly SentAttempt[]): Promise<void> {
  if (!sent.length) return;
  const col = <T>(f: (s: SentAttempt, delivered: boolean) => T) => sent.map((s) => f(s, s.result.outcome === 'delivered'));
  await (await nativePool(deps.orm)).query(
    `with v as (
       select * from unnest($1::text[], $2::text[], $3::boolean[], $4::integer[], $5::timestamptz[], $6::float8[], $7::smallint[], $8::text[],
                            $9::text[], $10::text[], $11::timestamptz[], $12::text[], $13::timestamptz[], $14::text[], $15::text[])
         as v(delivery_id, account_id, livemode, number, started_at, response_time_ms, http_status, outcome,
              error, response_excerpt, next_retry_at, status, delivered_at, delivered_by, endpoint_id)
     ), attempt as (
       insert into webhook_delivery_attempts
         (delivery_id, account_id, livemode, number, started_at, response_time_ms, http_status, outcome, error, response_excerpt, next_retry_at)
       select delivery_id, account_id, livemode, number, started_at, response_time_ms, http_status, outcome, error, response_excerpt, next_retry_at from v
     ), delivery as (
       update webhook_deliveries d set status = v.status, http_status = v.http_status, response_time_ms = v.response_time_ms, last_error = v.error,
              delivered_at = v.delivered_at, next_retry_at = v.next_retry_at, delivered_by = coalesce(v.delivered_by, d.delivered_by), updated_at = now()
         from v where d.id = v.delivery_id
     ), success as (
       select endpoint_id, account_id, livemode, max(delivered_at) as at from v where delivered_at is not null group by endpoint_id, account_id, livemode
     ), due as (
       select w.id, s.at from webhook_endpoints w join success s on w.id = s.endpoint_id and w.account_id = s.account_id and w.livemode = s.livemode
        where w.failing_since is not null or w.last_success_at is null or w.last_success_at < s.at - interval '1 second'
        order by w.id for no key update of w
     )
     update webhook_endpoints w set last_success_at = due.at, failing_since = null, updated_at = now() from due where w.id = due.id`,
    [col((s) => s.prepared.delivery.id), col((s) => s.input.accountId), col((s) => s.input.livemode), col((s) => s.prepared.delivery.attempts),
      col((s) => s.startedAt), col((s) => s.result.responseTimeMs), col((s) => s.result.httpStatus), col((s) => s.result.outcome),
      col((s) => s.result.error), col((s) => s.result.responseExcerpt), col((s) => s.retryAt), col((_, d) => (d ? 'delivered' : 'failed')),
      col((s, d) => (d ? s.finished : null)), col((s, d) => (d ? s.input.attemptKey : null)), col((s) => s.input.endpointId)],
  );
}

/** Step 4's rare part (410 disables the endpoint; failing for the whole window marks it) and step 5. */
export async function finishAttempt(deps: AttemptDeps, { input, prepared: { target, delivery }, result, finished, retryAt }: SentAttempt): Promise<AttemptResult> {
  const scope: Scope = { accountId: input.accountId, livemode: input.livemode };
  const delivered = result.outcome === 'delivered';
  if (result.outcome === 'gone' || (!delivered && !retryAt && input.kind === 'event')) {
    const em = scopedEm(deps.orm, scope);
    await em.transactional(async (tx) => {
      if (result.outcome === 'gone') await disableGone(tx, scope, input.endpointId, deps.logger);
      else await markFailingIfNoSuccessSince(tx, scope, input.endpointId, new Date(delivery.created_at), finished, deps.logger);
    });
  }

  webhookAttempts.inc({ outcome: delivered ? 'delivered' : 'failed' });
  if (delivered) {
    if (input.kind === 'event') webhookLag.observe((finished.getTime() - new Date(target.event_created_at).getTime()) / 1000);
    return { deliveryId: delivery.id, outcome: 'delivered', delayMs: null };
  }
  if (retryAt) return { deliveryId: delivery.id, outcome: 'retry', delayMs: Math.max(0, retryAt.getTime() - Date.now()) };
  return { deliveryId: delivery.id, outcome: 'failed', delayMs: null };
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
