import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { sendUpdate } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { BP_SEARCH_ATTRIBUTES } from '../../workflows/kit/search-attributes.ts';
import { shipmentStateQuery, steerShipmentUpdate, type SteerShipmentInput } from '../../workflows/shipping/shared.ts';
import type { Scope } from '../scope.ts';
import { Shipment } from './entities.ts';
import { adminActions, findShipment, shipmentView } from './service.ts';

/**
 * What ops staff do with shipments (the admin tRPC router): find one by id or tracking number, or
 * find workflows by search attribute; read a workflow's live state; steer it (re-poll the carrier,
 * mark delivered, mark an exception), each action recorded with the operator and the reason.
 */
export interface AdminShippingContext {
  em: EntityManager;
  temporal: TemporalHandle;
}

/** A shipment by id or tracking number, in any account (admin). */
export async function findShipmentAnywhere(em: EntityManager, by: { shipmentId?: string | undefined; trackingNumber?: string | undefined }) {
  const where = by.shipmentId ? { id: by.shipmentId } : { trackingNumber: by.trackingNumber ?? '' };
  const rows = await em.find(Shipment, where, { filters: false, limit: 20 });
  return rows.map((s) => ({ account_id: s.accountId, shipment: shipmentView(s) }));
}

/** Shipment workflows by search attribute (Temporal visibility: eventually consistent). */
export async function searchShipmentWorkflows(temporal: TemporalHandle, by: { accountId?: string | undefined; customerId?: string | undefined; resourceId?: string | undefined; status?: string | undefined }) {
  const K = BP_SEARCH_ATTRIBUTES;
  const quote = (v: string) => `'${v.replace(/'/g, "''")}'`;
  const terms = [`WorkflowType = 'shipmentWorkflow'`];
  if (by.accountId) terms.push(`${K.accountId.name} = ${quote(by.accountId)}`);
  if (by.customerId) terms.push(`${K.customerId.name} = ${quote(by.customerId)}`);
  if (by.resourceId) terms.push(`${K.resourceId.name} = ${quote(by.resourceId)}`);
  if (by.status) terms.push(`${K.status.name} = ${quote(by.status)}`);
  const out: { workflow_id: string; status: string; started_at: string }[] = [];
  for await (const wf of temporal.client.workflow.list({ query: terms.join(' AND ') })) {
    out.push({ workflow_id: wf.workflowId, status: wf.status.name, started_at: wf.startTime.toISOString() });
    if (out.length >= 100) break;
  }
  return out;
}

export async function describeShipmentWorkflow(ctx: AdminShippingContext, scope: Scope, id: string) {
  const s = await findShipment(ctx.em, id);
  const handle = ctx.temporal.client.workflow.getHandle(s.workflowId);
  const description = await handle.describe();
  const state = await handle.query(shipmentStateQuery);
  return {
    shipment: shipmentView(s),
    workflow: {
      workflow_id: description.workflowId, run_id: description.runId, status: description.status.name, task_queue: description.taskQueue,
      history_length: description.historyLength, started_at: description.startTime.toISOString(),
    },
    state: { ...state, seen: undefined, scans_seen: state.seen.length },
    actions: (await adminActions(ctx.em, scope, id)).map((a) => ({ ...a, at: new Date(a.at).toISOString() })),
  };
}

export async function steerShipment(ctx: AdminShippingContext, id: string, steer: SteerShipmentInput) {
  const s = await ctx.em.findOne(Shipment, { id });
  if (!s) throw notFound('shipment', id);
  const handle = ctx.temporal.client.workflow.getHandle(s.workflowId);
  const state = await sendUpdate(() => handle.executeUpdate(steerShipmentUpdate, { args: [steer] }), {
    resource: `Shipment ${id}`, suggestion: 'Only a shipment still travelling can be steered.',
    currentState: async () => (await findShipment(ctx.em.fork(), id)).status,
  });
  ctx.em.clear();
  return { shipment: shipmentView(await findShipment(ctx.em, id)), status: state.status };
}
