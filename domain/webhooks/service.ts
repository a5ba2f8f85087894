import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { ALL_EVENTS, type EventCatalog } from '../events/catalog.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { DestinationRefused, checkUrl, resolveDestination, type DestinationPolicy, type Resolver } from './destination.ts';
import {
  WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint, type DeliveryStatus,
} from './entities.ts';
import type { AttemptView, DeliveryView, EndpointView } from './schemas.ts';
import { generateSecret, secretProblem } from './signing.ts';

export type { AttemptView, DeliveryView, EndpointView } from './schemas.ts';

/** How long creating or updating an endpoint waits for DNS to check its host. */
const CREATE_DNS_TIMEOUT_MS = 3000;

/** After a rotation the previous secret keeps signing (a second signature) for this long. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

export type EndpointStatus = EndpointView['status'];

export function endpointView(e: WebhookEndpoint, opts: { withSecret?: boolean; now?: Date } = {}): EndpointView {
  const now = opts.now ?? new Date();
  const overlap = e.previousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt > now ? e.previousSecretExpiresAt : null;
  const view: EndpointView = {
    id: e.id,
    object: 'webhook_endpoint',
    livemode: e.livemode,
    url: e.url,
    description: e.description ?? null,
    events: e.events,
    enabled: e.enabled,
    status: !e.enabled ? 'disabled' : e.failingSince ? 'failing' : 'enabled',
    disabled_reason: e.enabled ? null : (e.disabledReason ?? null),
    failing_since: e.failingSince ? e.failingSince.toISOString() : null,
    previous_secret_expires_at: overlap ? overlap.toISOString() : null,
    metadata: e.metadata,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
  if (opts.withSecret) view.secret = e.secret;
  return view;
}

export interface EndpointSettings {
  allowPrivateNetworks: boolean;
  /** The kinds endpoints may subscribe to. */
  catalog: EventCatalog;
  /** For tests; the system resolver otherwise. */
  resolver?: Resolver;
}

export interface EndpointInput {
  url?: string;
  events?: string[];
  secret?: string;
  enabled?: boolean;
  description?: string | null;
  metadata?: Record<string, string | null>;
}

/** The nearest catalog name, for a suggestion (`payment.succeded` → `payment.succeeded`). */
function nearestEventType(type: string, types: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0]![j] = j;
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
    }
    return d[a.length]![b.length]!;
  };
  let best: { type: string; d: number } | undefined;
  for (const t of types) {
    const d = distance(type, t);
    if (!best || d < best.d) best = { type: t, d };
  }
  return best && best.d <= Math.max(3, Math.floor(type.length / 3)) ? best.type : undefined;
}

function eventErrors(events: string[], catalog: EventCatalog): FieldError[] {
  return events.flatMap((type, i) => {
    if (type === ALL_EVENTS || catalog.has(type)) return [];
    const near = nearestEventType(type, catalog.types);
    return [{
      path: `events.${i}`,
      message: `unknown event kind '${type}'${near ? `; did you mean '${near}'?` : ''} (see GET /docs or docs/events.md for the catalog, or use '*' for every kind)`,
    }];
  });
}

/**
 * Checks the URL for the key's mode: the scheme and literal addresses at once, and names through
 * DNS (a name that resolves to a forbidden address is refused now; one that does not resolve yet
 * is accepted, since every attempt checks again).
 */
async function checkEndpointUrl(url: string, scope: Scope, settings: EndpointSettings, path = 'url'): Promise<void> {
  const policy: DestinationPolicy = { livemode: scope.livemode, allowPrivateNetworks: settings.allowPrivateNetworks };
  try {
    const parsed = checkUrl(url, policy);
    // A name that does not resolve (yet), or whose DNS is slow, is accepted: every attempt checks again.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      resolveDestination(parsed, policy, settings.resolver).catch((err: unknown) => {
        if (err instanceof DestinationRefused && /does not resolve/.test(err.message)) return;
        throw err;
      }),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CREATE_DNS_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
  } catch (err) {
    if (!(err instanceof DestinationRefused)) throw err;
    throw new ApiError({
      status: 422, code: 'webhook_url_forbidden', title: 'Validation Failed',
      detail: `The endpoint URL is not allowed: ${err.message}.`,
      suggestion: scope.livemode
        ? 'Use an https:// URL on a public host that your receiver serves.'
        : 'Use an https:// URL on a public host (private and loopback addresses need a server started with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, for test mode only).',
      errors: [{ path, message: err.message }],
    });
  }
}

function mergeMetadata(current: Record<string, string>, patch: Record<string, string | null>): Record<string, string> {
  const next = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === '') delete next[k];
    else next[k] = v;
  }
  return next;
}

function normaliseEvents(events: string[]): string[] {
  const unique = [...new Set(events)];
  return unique.includes(ALL_EVENTS) ? [ALL_EVENTS] : unique;
}

export async function createEndpoint(em: EntityManager, scope: Scope, input: EndpointInput & { url: string; events: string[] }, settings: EndpointSettings): Promise<EndpointView> {
  const errors = eventErrors(input.events, settings.catalog);
  if (input.secret !== undefined) {
    const problem = secretProblem(input.secret);
    if (problem) errors.push({ path: 'secret', message: problem });
  }
  if (errors.length) throw validationFailed(errors);
  await checkEndpointUrl(input.url, scope, settings);
  const endpoint = em.create(WebhookEndpoint, {
    id: newId('webhookEndpoint'),
    ...scopeColumns(scope),
    url: input.url,
    description: input.description ?? null,
    events: normaliseEvents(input.events),
    secret: input.secret ?? generateSecret(),
    previousSecret: null,
    previousSecretExpiresAt: null,
    enabled: input.enabled ?? true,
    disabledReason: null,
    failingSince: null,
    lastSuccessAt: null,
    metadata: mergeMetadata({}, input.metadata ?? {}),
  });
  await em.flush();
  return endpointView(endpoint, { withSecret: true });
}

async function findEndpoint(em: EntityManager, id: string): Promise<WebhookEndpoint> {
  const endpoint = await em.findOne(WebhookEndpoint, { id });
  if (!endpoint) throw notFound('webhook endpoint', id);
  return endpoint;
}

export async function getEndpoint(em: EntityManager, id: string): Promise<EndpointView> {
  return endpointView(await findEndpoint(em, id));
}

/** An endpoint by id for GET /v3/webhooks/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readEndpoint(orm: MikroORM, scope: Scope, id: string): Promise<EndpointView> {
  return endpointView(await readScopedOr404(orm, scope, WebhookEndpoint, id, 'webhook endpoint'));
}

export async function listEndpoints(
  em: EntityManager, filters: { enabled?: boolean }, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<EndpointView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.enabled !== undefined) where.enabled = filters.enabled;
  const rows = await em.find(WebhookEndpoint, where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map((e) => endpointView(e));
}

/** Updates url, events, enabled, description, metadata (merged; null removes a key). Re-enabling clears a 410 disable. */
export async function updateEndpoint(em: EntityManager, scope: Scope, id: string, patch: Omit<EndpointInput, 'secret'>, settings: EndpointSettings): Promise<EndpointView> {
  const endpoint = await findEndpoint(em, id);
  if (patch.events) {
    const errors = eventErrors(patch.events, settings.catalog);
    if (errors.length) throw validationFailed(errors);
    endpoint.events = normaliseEvents(patch.events);
  }
  if (patch.url !== undefined && patch.url !== endpoint.url) {
    await checkEndpointUrl(patch.url, scope, settings);
    endpoint.url = patch.url;
  }
  if (patch.description !== undefined) endpoint.description = patch.description;
  if (patch.metadata) endpoint.metadata = mergeMetadata(endpoint.metadata, patch.metadata);
  if (patch.enabled !== undefined && patch.enabled !== endpoint.enabled) {
    endpoint.enabled = patch.enabled;
    if (patch.enabled) endpoint.disabledReason = null;
  }
  await em.flush();
  return endpointView(endpoint);
}

/** Deletes the endpoint and its delivery history; deliveries waiting to retry stop at their next attempt. */
export async function deleteEndpoint(em: EntityManager, id: string): Promise<void> {
  const deleted = await em.nativeDelete(WebhookEndpoint, { id });
  if (deleted === 0) throw notFound('webhook endpoint', id);
}

/**
 * A new secret (given, or generated); the current one keeps signing next to it for 24 hours, so
 * receivers can switch without missing a delivery. A second rotation within those hours ends the
 * older overlap (only the secret being replaced keeps signing).
 */
export async function rotateSecret(em: EntityManager, id: string, secret: string | undefined, now = new Date()): Promise<EndpointView> {
  if (secret !== undefined) {
    const problem = secretProblem(secret);
    if (problem) throw validationFailed([{ path: 'secret', message: problem }]);
  }
  const endpoint = await findEndpoint(em, id);
  const next = secret ?? generateSecret();
  if (next === endpoint.secret) {
    throw validationFailed([{ path: 'secret', message: 'the new secret must differ from the current one' }]);
  }
  endpoint.previousSecret = endpoint.secret;
  endpoint.previousSecretExpiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS);
  endpoint.secret = next;
  await em.flush();
  return endpointView(endpoint, { withSecret: true, now });
}

export function deliveryView(d: WebhookDelivery): DeliveryView {
  return {
    id: d.id,
    object: 'webhook_delivery',
    livemode: d.livemode,
    webhook_id: d.endpointId,
    event_id: d.eventId,
    event_type: d.eventType,
    status: d.status,
    http_status: d.httpStatus ?? null,
    attempts: d.attempts,
    delivered_at: d.deliveredAt ? d.deliveredAt.toISOString() : null,
    response_time: d.responseTimeMs == null ? null : Number(d.responseTimeMs),
    next_retry: d.nextRetryAt ? d.nextRetryAt.toISOString() : null,
    last_error: d.lastError ?? null,
    test: d.test,
    workflow_id: d.workflowId,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
  };
}

export async function listDeliveries(
  em: EntityManager, endpointId: string, filters: { status?: DeliveryStatus[]; event_type?: string[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<DeliveryView[]> {
  await findEndpoint(em, endpointId);
  const where: Record<string, unknown> = { ...page.where, endpointId };
  if (filters.status) where.status = { $in: filters.status };
  if (filters.event_type) where.eventType = { $in: filters.event_type };
  const rows = await em.find(WebhookDelivery, where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(deliveryView);
}

export async function findDelivery(em: EntityManager, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
  const delivery = await em.findOne(WebhookDelivery, { id: deliveryId, endpointId });
  if (!delivery) throw notFound('webhook delivery', deliveryId);
  return delivery;
}

export async function getDelivery(em: EntityManager, endpointId: string, deliveryId: string): Promise<DeliveryView & { attempt_history: AttemptView[] }> {
  const delivery = await findDelivery(em, endpointId, deliveryId);
  const attempts = await em.find(WebhookDeliveryAttempt, { deliveryId }, { orderBy: { id: 'asc' } });
  return {
    ...deliveryView(delivery),
    attempt_history: attempts.map((a) => ({
      number: a.number,
      started_at: a.startedAt.toISOString(),
      outcome: a.outcome,
      http_status: a.httpStatus ?? null,
      response_time: a.responseTimeMs == null ? null : Number(a.responseTimeMs),
      error: a.error ?? null,
      response_excerpt: a.responseExcerpt ?? null,
      next_retry: a.nextRetryAt ? a.nextRetryAt.toISOString() : null,
    })),
  };
}

/** A replay needs an enabled endpoint (a disabled one would refuse the attempt). */
export async function assertReplayable(em: EntityManager, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
  const endpoint = await findEndpoint(em, endpointId);
  const delivery = await findDelivery(em, endpointId, deliveryId);
  if (!endpoint.enabled && !delivery.test) {
    throw conflict('webhook_endpoint_disabled', `Webhook endpoint ${endpointId} is disabled${endpoint.disabledReason === 'gone' ? ' (its receiver answered 410 Gone)' : ''}.`,
      `Enable it first with PATCH /v3/webhooks/${endpointId} {"enabled": true}, then retry the delivery.`);
  }
  return delivery;
}
