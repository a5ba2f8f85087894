import type { MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { BP_SEARCH_ATTRIBUTES } from '../../workflows/kit/search-attributes.ts';
import { callWorkflowIds, type CallLiveState, type CallView, type MessageView } from '../../workflows/communications/shared.ts';
import { scopedEm, type Scope } from '../scope.ts';
import { getCall } from './calls.ts';
import { Call, CallRate, CommsAdminAction, CommsMessage, PhoneNumber } from './entities.ts';
import { messageView } from './messages.ts';
import { numberView, releaseNumber } from './numbers.ts';
import type { PhoneNumberView } from './schemas.ts';
import { callLiveState, hangupCall } from './service.ts';
import type { Telephony } from './telephony/index.ts';
import { carrierFor } from './numbers.ts';

/**
 * What operators do through the admin API: find a call, number or message by id (in any account),
 * or workflows by a search attribute; read a call's live state; hang up a stuck call and release a
 * number. Every action is recorded (`comm_admin_actions`) with the operator and the reason.
 */
export interface AdminDeps {
  orm: MikroORM;
  temporal: TemporalHandle;
  telephony: Telephony;
}

async function scopeOfRecord(orm: MikroORM, id: string): Promise<Scope & { kind: 'call' | 'phone_number' | 'message' }> {
  const em = orm.em.fork();
  const kinds = [['call', Call], ['phone_number', PhoneNumber], ['message', CommsMessage]] as const;
  for (const [kind, entity] of kinds) {
    const row = await em.findOne(entity as typeof Call, { id }, { filters: false, fields: ['accountId', 'livemode'] as never });
    if (row) return { accountId: row.accountId, livemode: row.livemode, kind };
  }
  throw notFound('call, phone number or message', id);
}

export type FoundRecord =
  | { kind: 'call'; account_id: string; call: CallView }
  | { kind: 'phone_number'; account_id: string; phone_number: PhoneNumberView }
  | { kind: 'message'; account_id: string; message: MessageView };

export async function findRecord(orm: MikroORM, id: string): Promise<FoundRecord> {
  const scope = await scopeOfRecord(orm, id);
  const em = scopedEm(orm, scope);
  if (scope.kind === 'call') return { kind: 'call', account_id: scope.accountId, call: await getCall(em, id) };
  if (scope.kind === 'phone_number') {
    return { kind: 'phone_number', account_id: scope.accountId, phone_number: numberView((await em.findOne(PhoneNumber, { id }))!) };
  }
  return { kind: 'message', account_id: scope.accountId, message: messageView((await em.findOne(CommsMessage, { id }))!) };
}

/** Workflows of this area with a search attribute's value (as ops staff filter in the Temporal UI). */
export async function findWorkflows(
  temporal: TemporalHandle, by: { attribute: 'accountId' | 'customerId' | 'resourceId' | 'status'; value: string }, limit = 50,
): Promise<{ workflow_id: string; type: string; status: string; call_id: string | null }[]> {
  const key = BP_SEARCH_ATTRIBUTES[by.attribute].name;
  const value = by.value.replace(/["\\]/g, '');
  const out: { workflow_id: string; type: string; status: string; call_id: string | null }[] = [];
  const query = `${key} = "${value}" AND TaskQueue = "${temporal.taskQueue('communications')}"`;
  for await (const wf of temporal.client.workflow.list({ query })) {
    out.push({ workflow_id: wf.workflowId, type: wf.type, status: wf.status.name, call_id: callWorkflowIds.parse(wf.workflowId) });
    if (out.length >= limit) break;
  }
  return out;
}

export async function liveState(orm: MikroORM, temporal: TemporalHandle, callId: string): Promise<CallLiveState> {
  const scope = await scopeOfRecord(orm, callId);
  const call = await getCall(scopedEm(orm, scope), callId);
  return callLiveState(temporal, call.workflow_id);
}

async function recordAction(orm: MikroORM, scope: Scope, targetId: string, action: string, operator: string, reason: string): Promise<void> {
  const em = orm.em.fork();
  em.create(CommsAdminAction, { id: newId('commsAdminAction'), accountId: scope.accountId, livemode: scope.livemode, targetId, action, operator, reason });
  await em.flush();
}

export async function adminHangup(deps: AdminDeps, input: { callId: string; operator: string; reason: string }): Promise<CallView> {
  const scope = await scopeOfRecord(deps.orm, input.callId);
  await recordAction(deps.orm, scope, input.callId, 'hangup', input.operator, input.reason);
  return hangupCall({ em: scopedEm(deps.orm, scope), temporal: deps.temporal, telephony: deps.telephony }, input.callId, `operator ${input.operator}: ${input.reason}`);
}

export async function adminRelease(deps: AdminDeps, input: { numberId: string; operator: string; reason: string }): Promise<PhoneNumberView> {
  const scope = await scopeOfRecord(deps.orm, input.numberId);
  await recordAction(deps.orm, scope, input.numberId, 'release_number', input.operator, input.reason);
  return releaseNumber(scopedEm(deps.orm, scope), () => carrierFor(deps.telephony, scope), input.numberId);
}

export async function adminSetRate(
  orm: MikroORM, input: { accountId: string; livemode: boolean; country: string; perMinute: number; operator: string; reason: string },
): Promise<{ country: string; per_minute: number; currency: string }> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const em = scopedEm(orm, scope);
  const existing = await em.findOne(CallRate, { country: input.country });
  if (existing) {
    existing.perMinute = input.perMinute;
    existing.updatedAt = new Date();
  } else {
    em.create(CallRate, { ...scope, country: input.country, perMinute: input.perMinute, currency: 'USD', updatedAt: new Date() });
  }
  await em.flush();
  await recordAction(orm, scope, `${input.accountId}:${input.country}`, 'set_rate', input.operator, input.reason);
  return { country: input.country, per_minute: input.perMinute, currency: 'USD' };
}

export async function adminActions(orm: MikroORM, targetId: string) {
  const rows = await orm.em.fork().find(CommsAdminAction, { targetId }, { orderBy: { createdAt: 'asc' } });
  return rows.map((r) => ({ id: r.id, action: r.action, operator: r.operator, reason: r.reason, created_at: r.createdAt.toISOString() }));
}
