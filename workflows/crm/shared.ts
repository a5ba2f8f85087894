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
