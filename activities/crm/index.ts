import type { MikroORM } from '@mikro-orm/postgresql';
import { finishRun, runAction, startRun, type ActionInput } from '../../domain/crm/actions.ts';
import type { ActionResult } from '../../domain/crm/entities.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';
import {
  evaluateCustomerSegments, evaluateSegment, METRICS_BATCH, refreshCustomerMetrics, refreshStaleMetrics, segmentUsesMetrics,
} from '../../domain/crm/segments.ts';

export interface CrmActivityDeps {
  orm: MikroORM;
}

interface RunRef {
  ruleId: string;
  eventId: string;
  accountId: string;
  livemode: boolean;
}

const scopeOf = (r: { accountId: string; livemode: boolean }): Scope => ({ accountId: r.accountId, livemode: r.livemode });

/** Activities of the CRM area (automation runs). */
export function createCrmActivities({ orm }: CrmActivityDeps) {
  return {
    async startAutomationRun(ref: RunRef & { workflowId: string }): Promise<void> {
      await startRun(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref);
    },
    async runAutomationAction(input: RunRef & Omit<ActionInput, 'ruleId' | 'eventId'>): Promise<ActionResult> {
      return runAction(scopedEm(orm, scopeOf(input)), scopeOf(input), input);
    },
    async finishAutomationRun(ref: RunRef & { status: 'completed' | 'failed'; results: ActionResult[] }): Promise<void> {
      await finishRun(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref);
    },
    async segmentUsesMetrics(ref: Scope & { segmentId: string }): Promise<boolean> {
      return segmentUsesMetrics(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref.segmentId);
    },
    async refreshStaleMetrics(ref: Scope & { after: string | null; staleAfterMs: number }): Promise<{ refreshed: number; last: string | null }> {
      return refreshStaleMetrics(scopedEm(orm, scopeOf(ref)), scopeOf(ref), { after: ref.after, limit: METRICS_BATCH, staleAfterMs: ref.staleAfterMs });
    },
    async evaluateSegment(ref: Scope & { segmentId: string }): Promise<{ entered: number; left: number; members: number }> {
      return evaluateSegment(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref.segmentId);
    },
    async refreshCustomerMetrics(ref: Scope & { customerId: string }): Promise<void> {
      await refreshCustomerMetrics(scopedEm(orm, scopeOf(ref)), scopeOf(ref), [ref.customerId]);
    },
    async evaluateCustomerSegments(ref: Scope & { customerId: string }): Promise<{ entered: number; left: number }> {
      return evaluateCustomerSegments(scopedEm(orm, scopeOf(ref)), scopeOf(ref), ref.customerId);
    },
  };
}

export type CrmActivities = ReturnType<typeof createCrmActivities>;
