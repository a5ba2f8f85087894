/**
 * What crosses the layers for the CRM area: pure (no Node, ORM or activity imports), since
 * workflows import it.
 */
import type { ActionResult, RuleAction } from '../../domain/crm/entities.ts';

/** One run per (rule, event): deterministic, so an event dispatched twice fires a rule once. */
export function automationWorkflowId(ruleId: string, eventId: string): string {
  return `crm-automation-${ruleId}-${eventId}`;
}

export interface AutomationRunInput {
  ruleId: string;
  eventId: string;
  eventType: string;
  accountId: string;
  livemode: boolean;
  customerId: string | null;
  /** The rule's actions when the event was matched (a later edit does not change a run). */
  actions: RuleAction[];
  /** The event's `data.object`, for message templates. */
  object: Record<string, unknown>;
}

export type { ActionResult, RuleAction };

/** A full evaluation of a segment (on create, on rule change, on demand): one per rules version and request. */
export function segmentEvaluationWorkflowId(segmentId: string, suffix: string): string {
  return `segment-evaluation-${segmentId}-${suffix}`;
}
/** The schedule that re-evaluates a segment every night, and the id of the workflows it starts. */
export function segmentScheduleId(segmentId: string): string {
  return `segment-nightly-${segmentId}`;
}
/** The refresh of one customer's memberships after an event about them. */
export function customerSegmentsWorkflowId(customerId: string, eventId: string): string {
  return `segment-membership-${customerId}-${eventId}`;
}

export interface SegmentEvaluationInput {
  accountId: string;
  livemode: boolean;
  segmentId: string;
  /** Refresh metric snapshots older than this first (nightly); 0: only missing ones. */
  staleAfterMs: number;
}

export interface SegmentEvaluationResult {
  entered: number;
  left: number;
  members: number;
  metricsRefreshed: number;
}

export interface CustomerSegmentsInput {
  accountId: string;
  livemode: boolean;
  customerId: string;
  eventId: string;
}
