import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiError, notFound, validationFailed } from '../../platform/errors.ts';
import { recordEvent } from '../events/outbox.ts';
import { scopeColumns, type Scope } from '../scope.ts';
import type { CallView, CallLegView } from './schemas.ts';
import type { CallStatusValue, CallWorkflowInput } from '../../workflows/communications/shared.ts';
import { statusRank } from '../../workflows/communications/shared.ts';
import { Call, CallLeg, CallRate, PbxExtension, PhoneNumber, type CallStatus } from './entities.ts';
import { countryOf } from './phone.ts';
import { callQuality, type QualitySample } from './quality.ts';
import { CALL_CURRENCY, DEFAULT_RATES, FALLBACK_RATE, billedMinutes, callCost, defaultRate } from './rates.ts';

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
const num = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v));

export function legView(l: CallLeg): CallLegView {
  return {
    id: l.id, object: 'call_leg', role: l.role, to_number: l.toNumber, status: l.status, duration: l.duration,
    answered_at: iso(l.answeredAt), ended_at: iso(l.endedAt),
  };
}

export function callView(c: Call, legs: CallLeg[]): CallView {
  const mos = num(c.mos);
  return {
    id: c.id,
    object: 'call',
    livemode: c.livemode,
    status: c.status,
    to_number: c.toNumber,
    from_number: c.fromNumber,
    caller_id_name: c.callerIdName ?? null,
    record_call: c.recordCall,
    routing_options: { ring_timeout: c.ringTimeout, fallback_number: c.fallbackNumber ?? null },
    extension_id: c.extensionId ?? null,
    legs: [...legs].sort((a, b) => a.position - b.position).map(legView),
    duration: c.duration,
    billed_minutes: c.billedMinutes,
    cost: c.cost,
    rate_per_minute: c.ratePerMinute,
    currency: c.currency,
    quality: mos === null ? null : { mos, jitter: num(c.jitterMs) ?? 0, packet_loss: num(c.packetLoss) ?? 0, latency: num(c.latencyMs) ?? 0 },
    recording: c.recordingStatus
      ? { status: c.recordingStatus, url: c.recordingStatus === 'ready' ? `/v3/communications/calls/${c.id}/recording` : null }
      : null,
    failure: c.failureCode ? { code: c.failureCode, message: c.failureMessage ?? '' } : null,
    answered_at: iso(c.answeredAt),
    ended_at: iso(c.endedAt),
    workflow_id: c.workflowId,
    metadata: c.metadata,
    created: c.createdAt.toISOString(),
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

async function loadView(em: EntityManager, call: Call): Promise<CallView> {
  return callView(call, await em.find(CallLeg, { callId: call.id }));
}

export async function getCall(em: EntityManager, id: string): Promise<CallView> {
  const call = await em.findOne(Call, { id });
  if (!call) throw notFound('call', id);
  return loadView(em, call);
}

export async function findCallByRequestKey(em: EntityManager, key: string): Promise<CallView | null> {
  const call = await em.findOne(Call, { requestIdempotencyKey: key });
  return call ? loadView(em, call) : null;
}

/** The per-minute rate of a destination country for this account (its own, or the default). */
export async function rateFor(em: EntityManager, country: string): Promise<number> {
  const own = await em.findOne(CallRate, { country });
  return own ? own.perMinute : defaultRate(country);
}

/**
 * An extension is `busy` while a call to it is in progress: set when the call is answered (only from
 * `available`: `dnd` and `offline` are the user's own), back to `available` when it ends.
 */
async function setExtensionBusy(em: EntityManager, extensionId: string, busy: boolean): Promise<void> {
  const ext = await em.findOne(PbxExtension, { id: extensionId });
  if (!ext) return;
  if (busy && ext.status === 'available') ext.status = 'busy';
  else if (!busy && ext.status === 'busy') ext.status = 'available';
  else return;
  ext.updatedAt = new Date();
}

/** The extension a call connects: it must exist and be `available` (409 `extension_unavailable` otherwise). */
export async function checkExtension(em: EntityManager, extensionId: string): Promise<void> {
  const ext = await em.findOne(PbxExtension, { id: extensionId });
  if (!ext) throw validationFailed([{ path: 'extension_id', message: `no PBX extension with id '${extensionId}' exists in this account` }]);
  if (ext.status !== 'available') {
    throw new ApiError({
      status: 409, code: 'extension_unavailable', title: 'Conflict',
      detail: `Extension ${ext.extension} is ${ext.status}; a call can connect only an available extension.`,
      suggestion: ext.status === 'busy' ? 'Wait for its current call to end, or call another extension.' : 'Ask its user to become available, or call another extension.',
      extensions: { current_state: ext.status },
    });
  }
}

/** The account's rate table: its own rates over the defaults, by country. */
export async function rateTable(em: EntityManager) {
  const own = await em.find(CallRate, {}, { orderBy: { country: 'asc' } });
  const merged = new Map<string, { per_minute: number; source: 'account' | 'default' }>(
    Object.entries(DEFAULT_RATES).map(([country, perMinute]) => [country, { per_minute: perMinute, source: 'default' }]),
  );
  for (const r of own) merged.set(r.country, { per_minute: r.perMinute, source: 'account' });
  return {
    object: 'call_rate_table' as const, currency: CALL_CURRENCY, default_per_minute: FALLBACK_RATE,
    rates: [...merged.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([country, r]) => ({ country, ...r })),
  };
}

/** `from_number` must be one of the account's active numbers with the voice feature. */
export async function checkCallerNumber(em: EntityManager, from: string): Promise<void> {
  const number = await em.findOne(PhoneNumber, { number: from, status: 'active' });
  if (!number || !number.features.includes('voice')) {
    throw validationFailed([{
      path: 'from_number',
      message: number
        ? `${from} is provisioned without the voice feature; provision a number with features ["voice"]`
        : `${from} is not a number this account has provisioned; provision one with POST /v3/communications/numbers/provision (features ["voice"])`,
    }]);
  }
}

/** Writes the call and its primary leg (the workflow's first step); a repeated call returns it as it is. */
export async function recordCall(em: EntityManager, input: CallWorkflowInput, workflowId: string): Promise<CallView> {
  const scope: Scope = { accountId: input.accountId, livemode: input.livemode };
  const existing = await em.findOne(Call, { id: input.callId });
  if (existing) return loadView(em, existing);
  const country = countryOf(input.toNumber);
  const rate = await rateFor(em, country);
  return em.transactional(async (tx) => {
    const call = tx.create(Call, {
      id: input.callId, ...scopeColumns(scope), toNumber: input.toNumber, fromNumber: input.fromNumber, callerIdName: input.callerIdName,
      recordCall: input.recordCall, ringTimeout: input.ringTimeout, fallbackNumber: input.fallbackNumber, extensionId: input.extensionId ?? null, status: 'queued',
      destinationCountry: country, duration: 0, billedMinutes: 0, cost: 0, ratePerMinute: rate, currency: CALL_CURRENCY,
      mos: null, jitterMs: null, packetLoss: null, latencyMs: null, recordingStatus: input.recordCall ? 'pending' : null, recordingDuration: null,
      failureCode: null, failureMessage: null, answeredAt: null, endedAt: null, workflowId,
      requestIdempotencyKey: input.requestIdempotencyKey, metadata: input.metadata,
    });
    await tx.flush();
    const leg = tx.create(CallLeg, {
      id: input.primaryLegId, callId: call.id, position: 0, role: 'primary', toNumber: input.toNumber, status: 'queued',
      carrierCallId: null, duration: 0, answeredAt: null, endedAt: null,
    });
    await tx.flush();
    return callView(call, [leg]);
  });
}

/** Creates the leg (a fallback leg on first use) and stores the carrier's id for it. */
export async function recordLegDialed(
  em: EntityManager, input: { callId: string; legId: string; role: 'primary' | 'fallback'; toNumber: string; carrierCallId: string | null },
): Promise<void> {
  await em.transactional(async (tx) => {
    let leg = await tx.findOne(CallLeg, { id: input.legId });
    if (!leg) {
      leg = tx.create(CallLeg, {
        id: input.legId, callId: input.callId, position: input.role === 'primary' ? 0 : 1, role: input.role, toNumber: input.toNumber,
        status: 'queued', carrierCallId: null, duration: 0, answeredAt: null, endedAt: null,
      });
    }
    if (input.carrierCallId) leg.carrierCallId = input.carrierCallId;
    await tx.flush();
  });
}

/**
 * A leg moved on (a callback or a poll of the carrier). Statuses only move forwards, on the leg and
 * on the call; the call's first step past `queued` records `call.initiated`.
 */
export async function recordProgress(
  em: EntityManager, scope: Scope, input: { callId: string; legId: string; status: CallStatusValue; requestId: string | null },
): Promise<CallView> {
  return em.transactional(async (tx) => {
    const call = await tx.findOne(Call, { id: input.callId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!call) throw notFound('call', input.callId);
    const leg = await tx.findOne(CallLeg, { id: input.legId });
    const now = new Date();
    // Progress of a leg never ends the call here (finishCall does, with the outcome).
    const legStatus: CallStatus = input.status;
    if (leg && statusRank(legStatus) > statusRank(leg.status)) {
      leg.status = legStatus;
      if (legStatus === 'in_progress') leg.answeredAt = now;
    }
    const callStatus = statusRank(input.status) >= 4 ? call.status : input.status;
    if (statusRank(callStatus) > statusRank(call.status)) {
      const before = call.status;
      call.status = callStatus;
      if (callStatus === 'in_progress' && !call.answeredAt) call.answeredAt = now;
      if (callStatus === 'in_progress' && call.extensionId) await setExtensionBusy(tx, call.extensionId, true);
      call.updatedAt = now;
      if (before === 'queued') {
        await tx.flush();
        recordEvent(tx, scope, { type: 'call.initiated', object: await loadView(tx, call), requestId: input.requestId });
      }
    }
    await tx.flush();
    return loadView(tx, call);
  });
}

export interface CallOutcome {
  callId: string;
  /** The leg that ended the call. */
  legId: string;
  status: CallStatusValue;
  /** Ends per leg, for the legs table. */
  legs: { legId: string; status: CallStatusValue; duration: number }[];
  duration: number;
  quality: QualitySample[];
  failure: { code: string; message: string } | null;
  requestId: string | null;
}

/** The call ended: duration, cost, quality, and `call.completed` or `call.failed`. Once. */
export async function finishCall(em: EntityManager, scope: Scope, outcome: CallOutcome): Promise<CallView> {
  return em.transactional(async (tx) => {
    const call = await tx.findOne(Call, { id: outcome.callId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!call) throw notFound('call', outcome.callId);
    if (statusRank(call.status) >= 4) return loadView(tx, call);
    const now = new Date();
    for (const end of outcome.legs) {
      const leg = await tx.findOne(CallLeg, { id: end.legId });
      if (!leg) continue;
      leg.status = end.status;
      leg.duration = end.duration;
      leg.endedAt ??= now;
    }
    const connected = await tx.findOne(CallLeg, { id: outcome.legId });
    const country = connected ? countryOf(connected.toNumber) : call.destinationCountry;
    if (country !== call.destinationCountry) {
      call.destinationCountry = country;
      call.ratePerMinute = await rateFor(tx, country);
    }
    call.status = outcome.status;
    call.duration = outcome.status === 'completed' ? outcome.duration : 0;
    call.billedMinutes = billedMinutes(call.duration);
    call.cost = callCost(call.duration, call.ratePerMinute);
    const quality = callQuality(outcome.quality);
    if (quality) {
      call.mos = String(quality.mos);
      call.jitterMs = String(quality.jitter);
      call.packetLoss = String(quality.packet_loss);
      call.latencyMs = String(quality.latency);
    }
    if (call.recordCall && (outcome.status !== 'completed' || call.duration === 0)) call.recordingStatus = 'absent';
    if (outcome.failure) {
      call.failureCode = outcome.failure.code;
      call.failureMessage = outcome.failure.message;
    }
    call.endedAt = now;
    call.updatedAt = now;
    if (call.extensionId) await setExtensionBusy(tx, call.extensionId, false);
    await tx.flush();
    const view = await loadView(tx, call);
    recordEvent(tx, scope, { type: outcome.status === 'completed' ? 'call.completed' : 'call.failed', object: view, requestId: outcome.requestId });
    await tx.flush();
    return view;
  });
}

/** The carrier has the recording: `call.recording.ready`, once. */
export async function markRecordingReady(em: EntityManager, scope: Scope, callId: string, requestId: string | null): Promise<CallView> {
  return em.transactional(async (tx) => {
    const call = await tx.findOne(Call, { id: callId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!call) throw notFound('call', callId);
    if (call.recordingStatus === 'ready') return loadView(tx, call);
    call.recordingStatus = 'ready';
    call.recordingDuration = call.duration;
    call.updatedAt = new Date();
    await tx.flush();
    const view = await loadView(tx, call);
    recordEvent(tx, scope, { type: 'call.recording.ready', object: view, requestId });
    await tx.flush();
    return view;
  });
}

/** The carrier call id of the leg that was answered (the recording's), when the recording is ready. */
export async function recordingSource(em: EntityManager, callId: string): Promise<string> {
  const call = await em.findOne(Call, { id: callId });
  if (!call) throw notFound('call', callId);
  if (!call.recordCall) {
    throw new ApiError({
      status: 404, code: 'recording_not_found', title: 'Not Found',
      detail: `Call ${callId} was not recorded (record_call was false).`,
      suggestion: 'Set record_call to true when placing a call whose recording you need.',
    });
  }
  const legs = await em.find(CallLeg, { callId, status: 'completed' });
  const leg = legs.find((l) => l.carrierCallId);
  if (call.recordingStatus !== 'ready' || !leg) {
    throw new ApiError({
      status: 404, code: 'recording_not_ready', title: 'Not Found',
      detail: `Call ${callId} has no recording yet (call status ${call.status}, recording ${call.recordingStatus ?? 'none'}).`,
      suggestion: 'Wait for the call.recording.ready event (or poll GET /v3/communications/calls/{id} until recording.status is ready).',
      extensions: { current_state: call.status },
    });
  }
  return leg.carrierCallId!;
}

export interface CallFilters {
  status?: CallStatusValue[];
  toNumber?: string;
  fromNumber?: string;
  createdGte?: Date;
  createdLte?: Date;
}

export async function listCalls(
  em: EntityManager, filters: CallFilters, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<CallView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.status) where.status = { $in: filters.status };
  if (filters.toNumber) where.toNumber = filters.toNumber;
  if (filters.fromNumber) where.fromNumber = filters.fromNumber;
  if (filters.createdGte || filters.createdLte) {
    where.createdAt = { ...(filters.createdGte ? { $gte: filters.createdGte } : {}), ...(filters.createdLte ? { $lte: filters.createdLte } : {}) };
  }
  const calls = await em.find(Call, where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  const legs = calls.length ? await em.find(CallLeg, { callId: { $in: calls.map((c) => c.id) } }) : [];
  return calls.map((c) => callView(c, legs.filter((l) => l.callId === c.id)));
}
