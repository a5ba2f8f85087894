import type { MikroORM } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { nativePool } from '../../db/pool.ts';
import { validationFailed } from '../../platform/errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import {
  REWARDS_AREA, adjustPointsUpdate, loyaltyProgressQuery, loyaltyWorkflowId, reevaluateTierUpdate,
  type LedgerEntryView, type LoyaltyProgress, type LoyaltyRef, type TierChangeView,
} from '../../workflows/rewards/shared.ts';
import { scopedEm } from '../scope.ts';
import { rewardsId } from './ids.ts';
import { toDate } from './points.ts';
import { loadProgram, programNow } from './program.ts';
import { getBalance, onLoyaltyWorkflow, requireCustomer, type LoyaltyTemporal } from './service.ts';

/** Operations staff's view of loyalty accounts: the same services as the API, plus an audit of every action. */

const temporalOf = (t: TemporalHandle): LoyaltyTemporal => ({ client: t.client, taskQueue: t.taskQueue(REWARDS_AREA) });
const SAFE = /^[A-Za-z0-9_-]+$/;

export interface FindInput {
  accountId?: string | undefined;
  livemode?: boolean | undefined;
  customerId?: string | undefined;
  resourceId?: string | undefined;
  workflowId?: string | undefined;
  limit: number;
}

/** The area's workflows by id or by search attribute (account, mode, customer, resource), newest first. */
export async function findLoyaltyWorkflows(temporal: TemporalHandle, input: FindInput) {
  const bad = Object.entries({ accountId: input.accountId, customerId: input.customerId, resourceId: input.resourceId, workflowId: input.workflowId })
    .filter(([, v]) => v !== undefined && !SAFE.test(v));
  if (bad.length) throw validationFailed(bad.map(([path]) => ({ path, message: 'letters, digits, _ and - only' })));
  const clauses = [`WorkflowType IN ('loyaltyWorkflow', 'loyaltyOrderEventWorkflow')`, `TaskQueue = '${temporal.taskQueue(REWARDS_AREA)}'`];
  if (input.workflowId) clauses.push(`WorkflowId = '${input.workflowId}'`);
  if (input.accountId) clauses.push(`BpAccountId = '${input.accountId}'`);
  if (input.livemode !== undefined) clauses.push(`BpMode = '${input.livemode ? 'live' : 'test'}'`);
  if (input.customerId) clauses.push(`BpCustomerId = '${input.customerId}'`);
  if (input.resourceId) clauses.push(`BpResourceId = '${input.resourceId}'`);
  const found = [];
  for await (const wf of temporal.client.workflow.list({ query: clauses.join(' AND ') })) {
    found.push({ workflow_id: wf.workflowId, run_id: wf.runId, type: wf.type, status: wf.status.name, started_at: wf.startTime.toISOString() });
    if (found.length >= input.limit) break;
  }
  return found;
}

/** A customer's loyalty workflow as it runs (its progress query) next to the balance it keeps. */
export async function describeLoyalty(orm: MikroORM, temporal: TemporalHandle, ref: LoyaltyRef) {
  const em = scopedEm(orm, ref);
  const scope = { accountId: ref.accountId, livemode: ref.livemode };
  const balance = await getBalance(await nativePool(orm), em, scope, ref.customerId);
  const handle = temporal.client.workflow.getHandle(loyaltyWorkflowId(ref.customerId));
  try {
    const description = await handle.describe();
    const progress: LoyaltyProgress | null = description.status.name === 'RUNNING' ? await handle.query(loyaltyProgressQuery) : null;
    return {
      balance,
      workflow: {
        workflow_id: description.workflowId, run_id: description.runId, status: description.status.name, task_queue: description.taskQueue,
        history_length: description.historyLength, started_at: description.startTime.toISOString(),
      },
      state: progress && {
        clock_now: progress.clockNow && new Date(progress.clockNow).toISOString(),
        next_due_at: progress.nextDueAt && new Date(progress.nextDueAt).toISOString(),
        processed: progress.processed,
      },
    };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { balance, workflow: null, state: null };
    throw err;
  }
}

interface ActionInput extends LoyaltyRef {
  operator: string;
  reason: string;
}

async function recordAction(orm: MikroORM, input: ActionInput, action: string, result: object): Promise<{ id: string }> {
  const pool = await nativePool(orm);
  const id = rewardsId('adminAction');
  await pool.query(
    `insert into loyalty_admin_actions (id, account_id, livemode, customer_id, action, operator, reason, result) values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, input.accountId, input.livemode, input.customerId, action, input.operator, input.reason, JSON.stringify(result)]);
  return { id };
}

async function programClock(orm: MikroORM, ref: LoyaltyRef): Promise<{ at: number; clockNow: number | null }> {
  const program = await loadProgram(await nativePool(orm), ref);
  return { at: programNow(program).getTime(), clockNow: program.testClockTime?.getTime() ?? null };
}

/** A manual adjustment (positive: a new available grant; negative: taken from the balance), through the customer's workflow. */
export async function operatorAdjust(orm: MikroORM, temporal: TemporalHandle, input: ActionInput & { points: number }): Promise<{ action_id: string; entry: LedgerEntryView }> {
  await requireCustomer(scopedEm(orm, input), input.customerId, 'customerId');
  const { at, clockNow } = await programClock(orm, input);
  const entry = await onLoyaltyWorkflow(temporalOf(temporal), input, clockNow, adjustPointsUpdate, [{
    adjustmentId: rewardsId('grant'), points: input.points, reason: input.reason, operator: input.operator, at, clockNow,
  }]);
  const { id } = await recordAction(orm, input, 'adjust_points', { points: input.points, entry_id: entry.id, balance_after: entry.balance_after });
  return { action_id: id, entry };
}

/** Re-runs the tier evaluation now (the anniversary rule), through the customer's workflow. */
export async function operatorReevaluateTier(orm: MikroORM, temporal: TemporalHandle, input: ActionInput): Promise<{ action_id: string; change: TierChangeView | null }> {
  await requireCustomer(scopedEm(orm, input), input.customerId, 'customerId');
  const { at, clockNow } = await programClock(orm, input);
  const change = await onLoyaltyWorkflow(temporalOf(temporal), input, clockNow, reevaluateTierUpdate, [{ at, clockNow }]);
  const { id } = await recordAction(orm, input, 'reevaluate_tier', change ? { from: change.previous_tier, to: change.tier } : { unchanged: true });
  return { action_id: id, change };
}

export async function listAdminActions(orm: MikroORM, ref: LoyaltyRef) {
  const { rows } = await (await nativePool(orm)).query(
    `select id, action, operator, reason, result, created_at from loyalty_admin_actions
      where account_id = $1 and livemode = $2 and customer_id = $3 order by id desc limit 100`, [ref.accountId, ref.livemode, ref.customerId]);
  return rows.map((r) => ({ ...r, created_at: toDate(r.created_at as string).toISOString() }));
}
