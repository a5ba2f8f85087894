import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';
import { activitySteps } from '../support/histories.ts';
import { TO, provision, waitForCall } from './support.ts';

// 250 ms per call second (calls.test.ts uses 20): the ring timeout's timer and the silence poll are
// then seconds apart in real time, more than the Temporal dev server's timers may fire late (~1 s).
useEnv({ COMMUNICATIONS_SANDBOX_SECOND_MS: '250' });

let platform: TestPlatform;
let http: Http;
let key: string;
let from: string;

usePlatform({ worker: true }, async (t) => {
  ({ platform, http, key } = t);
  from = (await provision(http, key, ['voice'])).number;
});

describe('a ring timeout racing the answer', () => {
  it('a leg answered before its ring_timeout fires, its answer not yet heard, goes on as answered: never cut off', async () => {
    // The carrier answers at 4 call seconds but its callbacks stop after ringing (lost). At the 5 s
    // ring timeout the workflow has not heard the answer: it asks the carrier to cancel the leg if it
    // still rings, learns that it was answered, and goes on with the call.
    const res = await http('/v3/communications/calls', { key, body: { from_number: from, to_number: TO.lostCallbacks, routing_options: { ring_timeout: 5 } } });
    expect(res.status, res.text).toBe(201);
    const live = await waitForCall(http, key, res.body.id, (c) => c.status !== 'queued' && c.status !== 'initiated' && c.status !== 'ringing');
    expect(live.status).toBe('in_progress');
    const [leg] = await platform.sql<{ hung_up_at: string | null }>(
      `select hung_up_at from sandbox_telephony_calls where idempotency_key like $1`, [`${res.body.id}:%`]);
    expect(leg, 'the carrier leg is still up').toEqual({ hung_up_at: null });
    const steps = activitySteps(await platform.temporal.client.workflow.getHandle(live.workflow_id).fetchHistory());
    expect(steps).toContainEqual(['hangUpLeg', 'activity']); // the ring timeout's cancel, which left the answered leg alone

    const hung = await http(`/v3/communications/calls/${res.body.id}/hangup`, { key, body: {} });
    expect(hung.status, hung.text).toBe(200);
    expect(hung.body).toMatchObject({ status: 'completed', failure: null });
    expect(hung.body.duration).toBeGreaterThanOrEqual(1);
  });

  it('a leg still ringing at its ring_timeout is canceled (no_answer), the carrier leg hung up', async () => {
    const res = await http('/v3/communications/calls', { key, body: { from_number: from, to_number: TO.noAnswer, routing_options: { ring_timeout: 5 } } });
    expect(res.status, res.text).toBe(201);
    const call = await waitForCall(http, key, res.body.id);
    expect(call).toMatchObject({ status: 'no_answer', failure: { code: 'no_answer' } });
    const [leg] = await platform.sql<{ hung_up_at: string | null }>(
      `select hung_up_at from sandbox_telephony_calls where idempotency_key like $1`, [`${call.id}:%`]);
    expect(leg!.hung_up_at).not.toBeNull();
  });
});
