import type { EntityManager } from '@mikro-orm/postgresql';
import type { QueueArea } from '../../platform/temporal.ts';

/**
 * The outbox's extension point. The event dispatcher (webhooks area) reads each undispatched
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
  area: QueueArea;
  args: unknown[];
  /** Search attributes for the Temporal UI (BpAccountId, BpMode, BpCustomerId, BpResourceId). */
  searchAttributes?: Record<string, string[]>;
}

export interface EventConsumer {
  name: string;
  /** Which workflows this event starts; `em` is scoped to the event's account and mode. */
  plan(event: OutboxEvent, em: EntityManager): Promise<WorkflowStartRequest[]>;
}
