import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { TO, provision, waitForCall } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
// 250 ms per call second: the call talks for 7.5 s, long enough to see it in progress and kill the worker
// mid-call even when the worker handles the carrier's callbacks seconds late (a loaded machine).
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'communications', COMMUNICATIONS_SANDBOX_SECOND_MS: '250' });

// No in-process worker: the workers are child processes this file can kill.
usePlatform({}, (t) => ({ platform, http, key } = t));
afterAll(() => workers.killAll());

describe('a worker killed mid-call', () => {
  it('the call still completes on another worker: the lost callbacks are recovered by asking the carrier; one dial, one event', async () => {
    const first = await workers.start();
    const replacement = workers.standby();
    const from = (await provision(http, key, ['voice'])).number;
    const res = await http('/v3/communications/calls', { key, body: { to_number: TO.answered, from_number: from, record_call: true } });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id as string;
    await waitForCall(http, key, id, (c) => c.status === 'in_progress', 20_000);

    // The worker holding the carrier's pending callbacks (answered → completed) dies.
    await workers.kill(first);
    expect((await http(`/v3/communications/calls/${id}`, { key })).body.status).toBe('in_progress');
    await replacement.start();

    const done = await waitForCall(http, key, id, (c) => c.status === 'completed' && c.recording?.status === 'ready', 45_000);
    expect(done).toMatchObject({ status: 'completed', duration: 30, billed_minutes: 1, cost: 2 });
    expect(done.quality.mos).toBeGreaterThan(4);

    // The carrier placed the leg once (the dial is idempotent by call and leg).
    const dials = await platform.sql<{ attempts: number }>('select attempts from sandbox_telephony_calls where idempotency_key like $1', [`${id}:%`]);
    expect(dials).toEqual([{ attempts: 1 }]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [id]);
    expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.completed', 'call.recording.ready']);
    // The outcome came from asking the carrier (the completed callback died with the first worker).
    const history = await platform.temporal.client.workflow.getHandle(`call-${id}`).fetchHistory();
    const polled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'fetchLeg');
    expect(polled.length).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
