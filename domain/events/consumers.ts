import type { EntityManager } from '@mikro-orm/postgresql';
import type { SearchAttributePair } from '@temporalio/common';
import type { AreaServices, PlatformServices } from '../../platform/services.ts';

/**
 * The outbox's extension point. The event dispatcher (platform) reads each undispatched
 * event once, asks every registered consumer which workflows the event should start, starts them
 * with their deterministic ids (a duplicate start is a no-op, so a dispatcher that dies half-way
 * and runs again starts nothing twice) and only then marks the event dispatched.
 */
export interface OutboxEvent {
  id: string;
  type: string;
  accountId: string;
  livemode: boolean;
  customerId: string | null;
  requestId: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface WorkflowStartRequest {
  workflowType: string;
  /** Deterministic: derived from the event id and the target, e.g. `webhook-delivery-evt_…-whk_…`. */
  workflowId: string;
  /** The area whose task queue runs it. */
  area: string;
  args: unknown[];
  /** Search attributes for the Temporal UI (BpAccountId, BpMode, BpCustomerId, BpResourceId). */
  searchAttributes?: SearchAttributePair[];
}

export interface EventConsumer {
  name: string;
  /** Which workflows this event starts; `em` is scoped to the event's account and mode. */
  plan(event: OutboxEvent, em: EntityManager): Promise<WorkflowStartRequest[]>;
  /**
   * Optional fast path: does planned workflows' first step in the dispatcher's own pass (a
   * webhook's first attempt), before the events are marked dispatched, and says for each request
   * which workflow is still needed for the rest (retries), or none. It gets all of this consumer's
   * requests of the pass at once and answers in the same order. It must be safe to run again for
   * the same request (a dispatcher that dies before marking the event runs it again). A request
   * whose outcome is an error (or all of them, when it throws) is started as it is, so the
   * workflow does the first step itself.
   */
  firstSteps?(requests: WorkflowStartRequest[], ctx: FirstStepContext): Promise<FirstStepOutcome[]>;
}

/** A first step's outcome: the workflow still to start (null: none), or why the step could not be made. */
export type FirstStepOutcome = { rest: WorkflowStartRequest | null } | { error: unknown };

const passReads = new WeakMap<EntityManager, Map<string, Promise<unknown>>>();

/**
 * A read that every event of one dispatcher pass and scope may share: the dispatcher gives each
 * pass one EntityManager per (account, mode), so a consumer's plan reads what it needs once per
 * pass — enabled webhook endpoints, automation rules of a kind, whether a ledger exists — not once
 * per event. `key` names the read within the consumer (prefix it with the consumer's name).
 */
export function perPass<T>(em: EntityManager, key: string, read: () => Promise<T>): Promise<T> {
  let reads = passReads.get(em);
  if (!reads) passReads.set(em, (reads = new Map()));
  let found = reads.get(key) as Promise<T> | undefined;
  if (!found) reads.set(key, (found = read()));
  return found;
}

/** What a consumer's first step runs with: the worker's services, and the dispatcher's heartbeat. */
export interface FirstStepContext {
  services: PlatformServices & AreaServices;
  heartbeat(): void;
  /**
   * True when the request's event has left the pass since (another pass holds it now: this one
   * outlived its claim): a step not begun yet is not made (answer `{ rest: null }`).
   */
  dropped(request: WorkflowStartRequest): boolean;
}

/**
 * The numbers every event about a customer carries (`customer_metrics` in the webhook payload and in
 * GET /v3/events/{id}). The dispatcher computes them once per event (for all the customers of a
 * pass and scope at once) with an EntityManager scoped to
 * the event's account and mode, and stores them on the event, so every endpoint and every retry
 * sees the same numbers. One area provides them (its descriptor's `customerMetrics`).
 */
export interface CustomerMetrics {
  /** Lifetime value: sum of what the customer paid, net of refunds, in decimal major units. */
  total_ltv: number;
  /** 0–100: how engaged the customer is (interactions, recency). */
  engagement_score: number;
  /** subscriber, lead, opportunity, customer, loyal or churned. */
  lifecycle_stage: string;
}

/** The metrics of many customers of the em's scope at once (every one asked for is in the answer). */
export type CustomerMetricsSource = (em: EntityManager, customerIds: readonly string[]) => Promise<Map<string, CustomerMetrics>>;

/** What one pass of the dispatcher did. */
export interface DispatchBatchResult {
  events: number;
  started: number;
  alreadyStarted: number;
  failed: number;
  /** A full batch was read: there may be more. */
  more: boolean;
}
