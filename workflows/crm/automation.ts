import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { CrmActivities } from '../../activities/crm/index.ts';
import type { ActionResult, AutomationRunInput } from './shared.ts';

const acts = proxyActivities<CrmActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '1 minute', maximumAttempts: 20 },
});

/**
 * One firing of a CRM automation rule for one event: runs the rule's actions in order (create a
 * task, add a segment, send a message through a sandbox channel). Each action is an activity keyed
 * by (rule, event, action index), so a retried action finds what its first attempt made.
 */
export async function crmAutomationWorkflow(input: AutomationRunInput): Promise<ActionResult[]> {
  const ref = { ruleId: input.ruleId, eventId: input.eventId, accountId: input.accountId, livemode: input.livemode };
  await acts.startAutomationRun({ ...ref, workflowId: workflowInfo().workflowId });
  const results: ActionResult[] = [];
  try {
    for (const [index, action] of input.actions.entries()) {
      results.push(await acts.runAutomationAction({ ...ref, index, action, customerId: input.customerId, eventType: input.eventType, object: input.object }));
    }
  } catch (err) {
    await acts.finishAutomationRun({ ...ref, status: 'failed', results });
    throw err;
  }
  await acts.finishAutomationRun({ ...ref, status: 'completed', results });
  return results;
}
