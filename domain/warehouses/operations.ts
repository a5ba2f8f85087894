import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { BP_SEARCH_ATTRIBUTES } from '../../workflows/kit/search-attributes.ts';
import { cycleCountStateQuery, transferStateQuery } from '../../workflows/warehouses/shared.ts';
import type { Scope } from '../scope.ts';
import { actOnCycleCount, getCycleCount } from './cycle-counts.ts';
import { iso } from './inventory.ts';
import { actOnTransfer, getTransfer } from './transfers.ts';

/**
 * What operations staff do through the admin API: find a transfer or count (by id, or by search
 * attribute in Temporal's visibility), read its workflow's live state, and steer it; every action
 * is recorded with the operator and the reason (`warehouse_admin_actions`).
 */

export type Resource = { kind: 'transfer'; id: string } | { kind: 'cycle_count'; id: string };

export function resourceOf(id: string): Resource {
  if (id.startsWith('wtr_')) return { kind: 'transfer', id };
  if (id.startsWith('cc_')) return { kind: 'cycle_count', id };
  throw notFound('transfer or cycle count', id);
}

/** The resource, its workflow's description and its live state (a query). */
export async function inspect(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string) {
  const r = resourceOf(id);
  const resource = r.kind === 'transfer' ? await getTransfer(em, scope, id) : await getCycleCount(em, scope, id);
  const handle = temporal.client.workflow.getHandle(resource.workflow_id);
  const description = await handle.describe();
  const state = r.kind === 'transfer' ? await handle.query(transferStateQuery) : await handle.query(cycleCountStateQuery);
  const actions = await em.execute<{ action: string; operator: string; reason: string; created_at: string }[]>(
    `select action, operator, reason, ${iso('created_at')} as created_at from warehouse_admin_actions where resource_id = ? and account_id = ? and livemode = ? order by id`,
    [id, scope.accountId, scope.livemode]);
  return {
    resource, state, actions,
    workflow: { id: description.workflowId, run_id: description.runId, status: description.status.name, search_attributes: description.searchAttributes },
  };
}

/** Workflows of this area found by search attributes (Temporal visibility; eventually consistent). */
export async function search(temporal: TemporalHandle, filter: { accountId?: string; resourceId?: string; customerId?: string; status?: string }, limit = 50) {
  const K = BP_SEARCH_ATTRIBUTES;
  const quote = (v: string) => `'${v.replace(/'/g, "\\'")}'`;
  const clauses = [`WorkflowType IN ('transferWorkflow', 'cycleCountWorkflow')`];
  if (filter.accountId) clauses.push(`${K.accountId.name} = ${quote(filter.accountId)}`);
  if (filter.resourceId) clauses.push(`${K.resourceId.name} = ${quote(filter.resourceId)}`);
  if (filter.customerId) clauses.push(`${K.customerId.name} = ${quote(filter.customerId)}`);
  if (filter.status) clauses.push(`${K.status.name} = ${quote(filter.status)}`);
  const found: { workflow_id: string; type: string; status: string; start_time: string }[] = [];
  for await (const wf of temporal.client.workflow.list({ query: clauses.join(' AND ') })) {
    found.push({ workflow_id: wf.workflowId, type: wf.type, status: wf.status.name, start_time: wf.startTime.toISOString() });
    if (found.length >= limit) break;
  }
  return found;
}

async function record(em: EntityManager, scope: Scope, id: string, action: string, operator: string, reason: string): Promise<void> {
  await em.execute('insert into warehouse_admin_actions (account_id, livemode, resource_id, action, operator, reason) values (?, ?, ?, ?, ?, ?)',
    [scope.accountId, scope.livemode, id, action, operator, reason]);
}

/** Cancels a transfer (before dispatch), recorded with the operator and reason. */
export async function adminCancelTransfer(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, operator: string, reason: string) {
  const transfer = await actOnTransfer(temporal, em, scope, id, { kind: 'cancel', reason }, { actor: `admin:${operator}`, requestId: null });
  await record(em, scope, id, 'cancel_transfer', operator, reason);
  return transfer;
}

/** Force-closes (posts what was counted) or aborts a cycle count, recorded with the operator and reason. */
export async function adminCloseCycleCount(
  temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, mode: 'force_close' | 'abort', operator: string, reason: string,
) {
  const count = await actOnCycleCount(temporal, em, scope, id, { kind: 'close', mode, reason }, { actor: `admin:${operator}`, requestId: null });
  await record(em, scope, id, mode, operator, reason);
  return count;
}
