import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { statusRank } from '../../workflows/communications/shared.ts';
import type { TestPlatform } from '../support/platform.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';
import { activitySteps, localActivityResults, replayHistories } from '../support/histories.ts';
import { searchAttributesWhen } from '../support/search-attributes.ts';
import { ENDED, TO, provision, waitForCall } from './support.ts';

// 20 ms of real time per second of sandbox call time: a 30-second call takes 0.7 s.
useEnv({ COMMUNICATIONS_SANDBOX_SECOND_MS: '20' });

let platform: TestPlatform;
let http: Http;
let key: string;
let from: string;
const made: string[] = [];

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '5000' } }, async (t) => {
  ({ platform, http, key } = t);
  from = (await provision(http, key, ['voice'])).number;
});

async function place(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await http('/v3/communications/calls', { key, headers, body: { from_number: from, ...body } });
  if (res.status === 201) made.push(res.body.id);
  return res;
}

async function events(id: string): Promise<string[]> {
  const rows = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [id]);
  return rows.map((r) => r.type);
}

describe('calls on the sandbox carrier', () => {
  it('an answered call: queued at once, then completed with 30 s, one billed minute, good MOS and its events', async () => {
    const res = await place({ to_number: '+1 (415) 555-0123', caller_id_name: 'Acme', metadata: { ticket: 'T-1' } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ object: 'call', status: 'queued', to_number: TO.answered, from_number: from, caller_id_name: 'Acme', livemode: false });
    expect(res.body.id).toMatch(/^call_/);
    expect(res.body.workflow_id).toBe(`call-${res.body.id}`);
    expect(res.headers.get('location')).toBe(`/v3/communications/calls/${res.body.id}`);
    const call = await waitForCall(http, key, res.body.id);
    expect(call).toMatchObject({
      status: 'completed', duration: 30, billed_minutes: 1, rate_per_minute: 2, cost: 2, currency: 'USD', failure: null, recording: null,
      metadata: { ticket: 'T-1' },
    });
    expect(call.quality.mos).toBeGreaterThan(4);
    expect(call.quality.packet_loss).toBeLessThan(1);
    expect(call.legs).toEqual([expect.objectContaining({ role: 'primary', status: 'completed', duration: 30, to_number: TO.answered })]);
    expect(await events(call.id)).toEqual(['call.initiated', 'call.completed']);
    const handle = platform.temporal.client.workflow.getHandle(call.workflow_id);
    const attributes = await searchAttributesWhen(handle, 'completed');
    expect(attributes).toMatchObject({ BpResourceId: [call.id], BpMode: ['test'], BpStatus: ['completed'] });
    // Only the carrier's dial goes through the server's task queue: every database write is a local
    // activity, run in the task of the signal (the callback) that caused it.
    const steps = activitySteps(await handle.fetchHistory());
    expect(steps.filter(([, kind]) => kind === 'activity')).toEqual([['dialLeg', 'activity']]);
    expect(steps[0]).toEqual(['recordCall', 'local']);
    expect(steps.at(-1)).toEqual(['finishCall', 'local']);
    expect(steps.filter(([name]) => name === 'recordCallProgress').length).toBeGreaterThanOrEqual(2);
  });

  it.each([
    [TO.busy, 'busy', 'busy'],
    [TO.noAnswer, 'no_answer', 'no_answer'],
    [TO.failed, 'failed', 'carrier_error'],
  ])('%s ends as %s: no cost, no quality, call.failed', async (to, status, code) => {
    // A short ring_timeout only where nobody answers; busy and failed come well before 60 s.
    const res = await place({ to_number: to, routing_options: { ring_timeout: status === 'no_answer' ? 5 : 60 } });
    expect(res.status, res.text).toBe(201);
    const call = await waitForCall(http, key, res.body.id);
    expect(call).toMatchObject({ status, duration: 0, cost: 0, billed_minutes: 0, quality: null, failure: { code } });
    expect(call.legs).toEqual([expect.objectContaining({ role: 'primary', status })]);
    const kinds = await events(call.id);
    expect(kinds.at(-1)).toBe('call.failed');
    expect(kinds).not.toContain('call.completed');
  });

  it('the ring_timeout timer ends ringing as no_answer (before the carrier gives up) and hangs up the carrier leg', async () => {
    const res = await place({ to_number: TO.noAnswer, routing_options: { ring_timeout: 7 } });
    const call = await waitForCall(http, key, res.body.id);
    expect(call.status).toBe('no_answer');
    const rows = await platform.sql<{ hung_up_at: string | null; placed_at: string; second_ms: number }>(
      `select hung_up_at, placed_at, second_ms from sandbox_telephony_calls where idempotency_key like $1`, [`${call.id}:%`]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.hung_up_at, 'the workflow hung up the ringing leg').not.toBeNull();
    const rang = (Date.parse(rows[0]!.hung_up_at!) - Date.parse(rows[0]!.placed_at)) / rows[0]!.second_ms;
    expect(rang).toBeGreaterThanOrEqual(7); // at least 7 call seconds after the carrier placed it, well before the carrier's own limit (601)
    expect(rang).toBeLessThan(601);
  });

  it('poor quality: answered, MOS below 3 from jitter, loss and latency', async () => {
    const call = await waitForCall(http, key, (await place({ to_number: TO.poorQuality })).body.id);
    expect(call.status).toBe('completed');
    expect(call.quality.mos).toBeLessThan(3);
    expect(call.quality.jitter).toBeGreaterThan(30);
    expect(call.quality.packet_loss).toBeGreaterThan(5);
  });

  it('dials the fallback number once when the primary is busy; the answered fallback completes the call', async () => {
    const res = await place({ to_number: TO.busy, routing_options: { fallback_number: TO.other, ring_timeout: 60 } });
    const call = await waitForCall(http, key, res.body.id);
    expect(call).toMatchObject({ status: 'completed', duration: 30, cost: 2, routing_options: { fallback_number: TO.other } });
    expect(call.legs).toEqual([
      expect.objectContaining({ role: 'primary', to_number: TO.busy, status: 'busy' }),
      expect.objectContaining({ role: 'fallback', to_number: TO.other, status: 'completed', duration: 30 }),
    ]);
    expect(await events(call.id)).toEqual(['call.initiated', 'call.completed']);
  });

  it('a failed primary and an unanswered fallback: no_answer with both legs; an answered call never dials its fallback', async () => {
    const both = await waitForCall(http, key, (await place({ to_number: TO.failed, routing_options: { fallback_number: TO.noAnswer, ring_timeout: 15 } })).body.id);
    expect(both.status).toBe('no_answer');
    expect(both.legs.map((l: any) => [l.role, l.status])).toEqual([['primary', 'failed'], ['fallback', 'no_answer']]);
    const answered = await waitForCall(http, key, (await place({ to_number: TO.answered, routing_options: { fallback_number: TO.other } })).body.id);
    expect(answered.legs).toHaveLength(1);
  });

  it('duplicate and out-of-order callbacks: ignored; the status only moves forwards', async () => {
    const call = await waitForCall(http, key, (await place({ to_number: TO.chaotic })).body.id);
    expect(call).toMatchObject({ status: 'completed', duration: 30 });
    const handle = platform.temporal.client.workflow.getHandle(call.workflow_id);
    await handle.result(); // the call is written completed before its workflow task (and workflow) completes
    const history = await handle.fetchHistory();
    const signaled = (history.events ?? []).flatMap((e) => e.workflowExecutionSignaledEventAttributes?.input?.payloads ?? [])
      .map((p) => (JSON.parse(Buffer.from(p.data!).toString()) as { event: string }).event);
    // Four callbacks, each delivered twice: both copies of the first three came long before the end;
    // the end's second copy may come after the call ended, when there is no workflow left to take it.
    expect(signaled.filter((e) => e !== 'completed').sort()).toEqual(['answered', 'answered', 'initiated', 'initiated', 'ringing', 'ringing']);
    expect(signaled.filter((e) => e === 'completed').length).toBeGreaterThanOrEqual(1);
    const state = await handle.query<any>('callState');
    expect(state.duplicatesIgnored).toBeGreaterThanOrEqual(3);
    expect(state.staleIgnored).toBeGreaterThanOrEqual(1); // ringing and initiated after answered
    // The call's status after each progress write, in order: never backwards.
    const recorded = localActivityResults<{ status: string }>(history, 'recordCallProgress').map((view) => view.status);
    expect(recorded.length).toBeGreaterThan(0);
    const ranks = recorded.map((s) => statusRank(s as never));
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    expect(await events(call.id)).toEqual(['call.initiated', 'call.completed']);
  });

  it('hangs up an answered call (completed, billed for the time talked), then refuses a second hangup with 409', async () => {
    const res = await place({ to_number: TO.longCall, record_call: true });
    await waitForCall(http, key, res.body.id, (c) => c.status === 'in_progress');
    const early = await http(`/v3/communications/calls/${res.body.id}/recording`, { key });
    expect(early.status).toBe(404);
    expect(early.body.code).toBe('recording_not_ready');
    await new Promise((r) => setTimeout(r, 1400)); // about 70 call seconds: two billed minutes
    const hung = await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: { reason: 'customer asked' } });
    expect(hung.status, hung.text).toBe(200);
    expect(hung.body.status).toBe('completed');
    expect(hung.body.duration).toBeGreaterThan(60);
    expect(hung.body.duration).toBeLessThan(3600);
    expect(hung.body.billed_minutes).toBe(Math.ceil(hung.body.duration / 60));
    expect(hung.body.cost).toBe(hung.body.billed_minutes * 2);
    const again = await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: {} });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'completed' });

    // The recording: ready once the call completed, a valid WAV.
    const done = await waitForCall(http, key, res.body.id, (c) => c.recording?.status === 'ready');
    expect(done.recording.url).toBe(`/v3/communications/calls/${res.body.id}/recording`);
    const wav = await http(done.recording.url, { key });
    expect(wav.status).toBe(200);
    expect(wav.headers.get('content-type')).toBe('audio/wav');
    const bytes = Buffer.from(await (await fetch(platform.url + done.recording.url, { headers: { authorization: `Bearer ${key}`, accept: 'audio/wav' } })).arrayBuffer());
    expect(bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(bytes.subarray(8, 12).toString('ascii')).toBe('WAVE');
    expect(bytes.readUInt32LE(24)).toBe(8000);
    expect(bytes.readUInt32LE(40)).toBe(bytes.length - 44);
    expect(await events(res.body.id)).toEqual(['call.initiated', 'call.completed', 'call.recording.ready']);
    const handle = platform.temporal.client.workflow.getHandle(done.workflow_id);
    await handle.result(); // the recording is written ready before its workflow task (with its marker) completes
    const steps = activitySteps(await handle.fetchHistory());
    expect(steps.slice(-2)).toEqual([['finishCall', 'local'], ['collectRecording', 'local']]);
  });

  it('hanging up while it rings cancels the call; an unrecorded call has no recording', async () => {
    const res = await place({ to_number: TO.noAnswer, routing_options: { ring_timeout: 120 } });
    await waitForCall(http, key, res.body.id, (c) => c.status === 'ringing');
    const hung = await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: {} });
    expect(hung.status, hung.text).toBe(200);
    expect(hung.body).toMatchObject({ status: 'canceled', duration: 0, cost: 0, failure: { code: 'canceled' } });
    const rec = await http(`/v3/communications/calls/${res.body.id}/recording`, { key });
    expect(rec.status).toBe(404);
    expect(rec.body.code).toBe('recording_not_found');
  });

  it('hangups racing the callbacks: each call ends once, and its history replays (its writes are local activities beside the update)', async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const res = await place({ to_number: TO.longCall });
      expect(res.status, res.text).toBe(201);
      // At once, once ringing or once answered (each seen after its local write), then up to 45 ms
      // later: the update lands before, between or after the writes of the callbacks around it.
      const seen = (['queued', 'ringing', 'in_progress'] as const)[i % 3]!;
      if (seen !== 'queued') await waitForCall(http, key, res.body.id, (c) => statusRank(c.status) >= statusRank(seen));
      await new Promise((r) => setTimeout(r, (i % 4) * 15));
      const hung = await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: {} });
      expect(hung.status, hung.text).toBe(200);
      expect(['completed', 'canceled']).toContain(hung.body.status);
      return res.body.id as string;
    }));
    const histories = await Promise.all(ids.map(async (id) => {
      const kinds = await events(id);
      expect(kinds.filter((k) => k === 'call.completed' || k === 'call.failed')).toHaveLength(1);
      const history = await platform.temporal.client.workflow.getHandle(`call-${id}`).fetchHistory();
      return { name: `call-${id}.json`, history };
    }));
    // Those hung up once ringing or answered had progress written locally first.
    const progressed = histories.filter(({ history }) => activitySteps(history).some(([name, kind]) => name === 'recordCallProgress' && kind === 'local'));
    expect(progressed.length).toBeGreaterThan(0);
    const { failures, replayed } = await replayHistories(histories);
    expect(failures).toEqual([]);
    expect(replayed).toBe(ids.length);
  });

  it('a call to a PBX extension makes it busy while in progress and available again after; a dnd extension refuses calls', async () => {
    const pbx = (await http('/v3/communications/pbx', { key, body: { name: 'Support' } })).body.id;
    const ext = (await http(`/v3/communications/pbx/${pbx}/extensions`, { key, body: { extension: '410', user_id: 'agent_1' } })).body;
    const res = await place({ to_number: TO.longCall, extension_id: ext.id });
    expect(res.status, res.text).toBe(201);
    expect(res.body.extension_id).toBe(ext.id);
    await waitForCall(http, key, res.body.id, (c) => c.status === 'in_progress');
    const busy = await http(`/v3/communications/pbx/${pbx}/extensions`, { key });
    expect(busy.body.extensions[0]).toMatchObject({ extension: '410', status: 'busy' });
    const second = await place({ to_number: TO.answered, extension_id: ext.id });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'extension_unavailable', current_state: 'busy' });
    expect((await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: {} })).status).toBe(200);
    expect((await http(`/v3/communications/pbx/${pbx}/extensions/${ext.id}`, { key })).body.status).toBe('available');
    await http(`/v3/communications/pbx/${pbx}/extensions/${ext.id}`, { key, method: 'PATCH', body: { status: 'dnd' } });
    const dnd = await place({ to_number: TO.answered, extension_id: ext.id });
    expect(dnd.status).toBe(409);
    expect(dnd.body.current_state).toBe('dnd');
    const unknown = await place({ to_number: TO.answered, extension_id: 'ext_nope' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('extension_id');
  });

  it('refuses bad input with 422 naming each field, and answers other accounts\' calls with 404', async () => {
    const bad = await http('/v3/communications/calls', {
      key, body: { to_number: '4155550123', from_number: '+1415555', caller_id_name: 'A\u0000B', routing_options: { ring_timeout: 1e20 } },
    });
    expect(bad.status).toBe(422);
    const paths = [...new Set(bad.body.errors.map((e: any) => e.path))].sort();
    expect(paths).toEqual(['caller_id_name', 'from_number', 'routing_options.ring_timeout', 'to_number']);
    expect(bad.body.errors.find((e: any) => e.path === 'to_number').message).toMatch(/leading \+/);
    const notMine = await place({ to_number: TO.answered, from_number: '+14155550188' });
    expect(notMine.status).toBe(422);
    expect(notMine.body.errors[0]).toMatchObject({ path: 'from_number' });
    const sameFallback = await place({ to_number: TO.answered, routing_options: { fallback_number: TO.answered } });
    expect(sameFallback.status).toBe(422);
    expect(sameFallback.body.errors[0].path).toBe('routing_options.fallback_number');
    const unknown = await place({ to_number: TO.answered, colour: 'red' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('colour');

    const other = await platform.newKey({ accountId: await platform.newAccount() });
    expect((await http(`/v3/communications/calls/${made[0]}`, { key: other })).status).toBe(404);
    expect((await http(`/v3/communications/calls/${made[0]}/hangup`, { key: other, body: {} })).status).toBe(404);
    expect((await http(`/v3/communications/calls/${made[0]}/recording`, { key: other })).status).toBe(404);
  });

  it('the same Idempotency-Key places the call once', async () => {
    const headers = { 'Idempotency-Key': `call-${Date.now()}` };
    const first = await place({ to_number: TO.answered }, headers);
    const second = await place({ to_number: TO.answered }, headers);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    made.pop();
    await waitForCall(http, key, first.body.id);
  });

  it('lists calls with filters', async () => {
    const busy = await http('/v3/communications/calls?status=busy&limit=100', { key });
    expect(busy.status).toBe(200);
    expect(busy.body.data.length).toBeGreaterThan(0);
    expect(busy.body.data.every((c: any) => c.status === 'busy')).toBe(true);
    const bad = await http('/v3/communications/calls?status=sleeping', { key });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].path).toMatch(/^status/);
  });

  it('analytics sum the calls made (SQL), and an empty period gives zeros', async () => {
    for (const id of made) await waitForCall(http, key, id, (c) => ENDED.has(c.status) && (!c.record_call || c.recording?.status !== 'pending'));
    const calls = (await http('/v3/communications/calls?limit=100', { key })).body.data as any[];
    expect(calls.length).toBe(made.length);
    const res = await http('/v3/communications/analytics/calls?period=day&time_zone=UTC', { key });
    expect(res.status, res.text).toBe(200);
    const completed = calls.filter((c) => c.status === 'completed');
    const totalDuration = completed.reduce((s, c) => s + c.duration, 0);
    const totalCost = calls.reduce((s, c) => s + c.cost, 0);
    const minutes = calls.reduce((s, c) => s + c.billed_minutes, 0);
    expect(res.body).toMatchObject({
      object: 'call_analytics', period: 'day', total_calls: calls.length, completed_calls: completed.length, total_duration: totalDuration,
      costs: { total: totalCost, billed_minutes: minutes, currency: 'USD' },
    });
    expect(res.body.average_duration).toBe(Math.round((totalDuration / completed.length) * 100) / 100); // seconds, 2 decimals
    expect(res.body.costs.per_minute).toBe(2);
    const withMos = calls.filter((c) => c.quality);
    expect(res.body.call_quality.average_mos).toBeCloseTo(withMos.reduce((s, c) => s + c.quality.mos, 0) / withMos.length, 1);
    expect(res.body.by_status.busy).toBe(calls.filter((c) => c.status === 'busy').length);

    const empty = await http('/v3/communications/analytics/calls?period=custom&start=2001-01-01&end=2001-01-31&time_zone=Europe/Berlin', { key });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      total_calls: 0, total_duration: 0, average_duration: 0, costs: { total: 0, per_minute: 0 },
      call_quality: { average_mos: null, jitter_avg: null, packet_loss: null }, start: '2000-12-31T23:00:00.000Z', end: '2001-01-31T23:00:00.000Z',
    });
    const bad = await http('/v3/communications/analytics/calls?period=custom&start=31/01/2001&time_zone=Mars/Base', { key });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: any) => e.path).sort()).toEqual(['end', 'start', 'time_zone']);
  });

  it('admin: finds a call, reads its live state, hangs up a stuck call with the operator and reason recorded', async () => {
    const caller = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    const res = await place({ to_number: TO.longCall });
    await waitForCall(http, key, res.body.id, (c) => c.status === 'in_progress');
    const found = await caller.communications.find({ id: res.body.id });
    expect(found).toMatchObject({ kind: 'call', call: { id: res.body.id } });
    const state = await caller.communications.callState({ callId: res.body.id });
    expect(state).toMatchObject({ callId: res.body.id, status: 'in_progress', activeLeg: 'primary', hangupRequested: false });
    const byResource = await caller.communications.findWorkflows({ attribute: 'resourceId', value: res.body.id });
    expect(byResource.map((w) => w.workflow_id)).toContain(`call-${res.body.id}`);
    const ended = await caller.communications.hangup({ callId: res.body.id, operator: 'ops@example.com', reason: 'stuck call reported by the customer' });
    expect(ended.status).toBe('completed');
    expect(await caller.communications.actions({ targetId: res.body.id })).toEqual([
      expect.objectContaining({ action: 'hangup', operator: 'ops@example.com', reason: 'stuck call reported by the customer' }),
    ]);

    // An account's own rate for a country replaces the default in the table and on the next calls.
    const accountId = found.account_id;
    await caller.communications.setRate({ accountId, livemode: false, country: 'US', perMinute: 3, operator: 'ops@example.com', reason: 'negotiated rate' });
    const table = await http('/v3/communications/rates', { key });
    expect(table.status).toBe(200);
    expect(table.body.rates.find((r: any) => r.country === 'US')).toEqual({ country: 'US', per_minute: 3, source: 'account' });
    expect(table.body.rates.find((r: any) => r.country === 'GB')).toEqual({ country: 'GB', per_minute: 4, source: 'default' });
    const priced = await waitForCall(http, key, (await place({ to_number: TO.answered })).body.id);
    expect(priced).toMatchObject({ rate_per_minute: 3, cost: 3 });
  });
});
