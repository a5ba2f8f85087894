import type { MikroORM } from '@mikro-orm/postgresql';
import { finishRun, runAction, startRun, type ActionInput } from '../../domain/crm/actions.ts';
import type { ActionResult } from '../../domain/crm/entities.ts';
import { scopedEm, type Scope } from '../../domain/scope.ts';

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
  };
}

export type CrmActivities = ReturnType<typeof createCrmActivities>;
