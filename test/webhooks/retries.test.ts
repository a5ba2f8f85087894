import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { useWebhookFixture } from './support/fixture.ts';
import { deliveryStarted } from './support/dispatch.ts';
import { eventually } from './support/receiver.ts';

/**
 * Time-driven behaviour with the schedule shortened by configuration: retries after 100 ms and
 * 100 ms (so three attempts in all), a 1 s attempt timeout; the production schedule is documented
 * in docs/webhooks.md and checked in units.test.ts.
 */
let http: Http;
let key: string;
let platform: TestPlatform;
const holds: (() => void)[] = [];

const { receiver, endpointFor, emit, delivery } = useWebhookFixture(
  { WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WEBHOOK_RETRY_JITTER: '0', WEBHOOK_TIMEOUT_MS: '1000', EVENT_DISPATCH_SWEEP_MS: '1000' },
  (fx) => ({ http, key, platform } = fx),
);
afterAll(() => {
  for (const release of holds) release();
});
describe('retries', () => {
  it('retries a receiver that fails twice, then records it delivered after the third attempt, same webhook-id each time', async () => {
    const r = await receiver();
    r.reply = (req) => (req.n <= 2 ? { status: 500, body: 'boom' } : { status: 204 });
    const endpointId = await endpointFor(r);
    const eventId = await emit('order.created');
    await r.waitFor(3);
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'delivered' ? found : null;
    });
    expect(d).toMatchObject({ status: 'delivered', attempts: 3, http_status: 204, next_retry: null, last_error: null });
    expect(d.attempt_history.map((a: { outcome: string; http_status: number }) => [a.outcome, a.http_status])).toEqual([['failed', 500], ['failed', 500], ['delivered', 204]]);
    expect(d.attempt_history[0].response_excerpt).toBe('boom');
    expect(d.attempt_history[0].next_retry).toEqual(expect.any(String));
    expect(new Set(r.received.map((x) => x.headers['webhook-id']))).toEqual(new Set([eventId]));
    expect(r.received.every((x) => x.verifyError === null)).toBe(true);
    // Every attempt is re-signed with a fresh timestamp over the same body.
    expect(new Set(r.received.map((x) => x.body)).size).toBe(1);
  });

  it('gives up after the schedule, marks the endpoint failing and reports it as an event; a later success clears it', async () => {
    const r = await receiver();
    r.reply = () => ({ status: 503 });
    // Subscribed to its own failing report too: the consumer must still leave it out.
    const endpointId = await endpointFor(r, ['order.created', 'webhook_endpoint.failing']);
    const watcher = await receiver();
    const watcherId = await endpointFor(watcher, ['webhook_endpoint.failing']);
    const eventId = await emit('order.created');
    await r.waitFor(3);
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'failed' && found.attempts === 3 && found.next_retry === null ? found : null;
    });
    expect(d.http_status).toBe(503);
    const endpoint = await eventually(async () => {
      const res = await http(`/v3/webhooks/${endpointId}`, { key });
      return res.body.status === 'failing' ? res.body : null;
    });
    expect(endpoint.enabled).toBe(true);
    expect(endpoint.failing_since).toEqual(expect.any(String));
    const [report] = await watcher.waitFor(1);
    expect(report!.json).toMatchObject({ type: 'webhook_endpoint.failing', data: { object: { id: endpointId, status: 'failing' } } });
    // Not sent to the failing endpoint itself: once the report is dispatched (to the watcher), no
    // delivery of it to the failing endpoint was ever started.
    const reportId = report!.headers['webhook-id'] as string;
    expect(await deliveryStarted(platform, reportId, watcherId)).toBe(true);
    expect(await deliveryStarted(platform, reportId, endpointId)).toBe(false);
    expect(r.received).toHaveLength(3);
    expect(r.received.every((x) => x.json.type === 'order.created')).toBe(true);

    r.reply = () => ({ status: 200 });
    await emit('order.created');
    await r.waitFor(4);
    await eventually(async () => (await http(`/v3/webhooks/${endpointId}`, { key })).body.status === 'enabled');
  });

  it('disables the endpoint on 410 Gone and stops retrying', async () => {
    const r = await receiver();
    r.reply = () => ({ status: 410 });
    const endpointId = await endpointFor(r);
    const eventId = await emit('order.created');
    await r.waitFor(1);
    const endpoint = await eventually(async () => {
      const res = await http(`/v3/webhooks/${endpointId}`, { key });
      return res.body.enabled === false ? res.body : null;
    });
    expect(endpoint).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'failed' ? found : null;
    });
    expect(d).toMatchObject({ attempts: 1, http_status: 410, next_retry: null });
    const disabledEvents = await http('/v3/events?type=webhook_endpoint.disabled', { key });
    expect(disabledEvents.body.data.some((e: any) => e.data.object.id === endpointId)).toBe(true);
    // A disabled endpoint is not planned at all: the next event is dispatched without a delivery to it.
    const next = await emit('order.created');
    expect(await deliveryStarted(platform, next, endpointId)).toBe(false);
    expect(r.received).toHaveLength(1);
    const replay = await http(`/v3/webhooks/${endpointId}/deliveries/${d.id}/retry`, { key, method: 'POST' });
    expect(replay.status).toBe(409);
    expect(replay.body.code).toBe('webhook_endpoint_disabled');
  });

  it('honours Retry-After: the next attempt waits for it, not for the schedule', async () => {
    const r = await receiver();
    r.reply = (req) => (req.n === 1 ? { status: 429, headers: { 'retry-after': '3600' } } : { status: 200 });
    const endpointId = await endpointFor(r);
    // The same event to an endpoint retried on the schedule: its retries mark the time r's would have come.
    const marker = await receiver();
    marker.reply = (req) => (req.n <= 2 ? { status: 500 } : { status: 200 });
    await endpointFor(marker);
    const eventId = await emit('order.created');
    const [first] = await r.waitFor(1);
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'failed' ? found : null;
    });
    const wait = Date.parse(d.next_retry) - first!.at;
    expect(wait).toBeGreaterThan(3600_000 - 5000);
    expect(wait).toBeLessThan(3600_000 + 5000);
    // The schedule retried the marker twice (two 100 ms waits); Retry-After holds r back.
    await marker.waitFor(3);
    expect(r.received).toHaveLength(1);

    // A manual retry cuts the wait short (same workflow, same webhook-id).
    const replay = await http(`/v3/webhooks/${endpointId}/deliveries/${d.id}/retry`, { key, method: 'POST' });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('location')).toBe(`/v3/webhooks/${endpointId}/deliveries/${d.id}`);
    const [, second] = await r.waitFor(2);
    expect(second!.headers['webhook-id']).toBe(eventId);
    await eventually(async () => (await delivery(endpointId, eventId))?.status === 'delivered');
  });

  it('counts a receiver that hangs past the timeout as a failure and retries it', async () => {
    const r = await receiver();
    let release!: () => void;
    const hung = new Promise<void>((resolve) => {
      release = resolve;
    });
    holds.push(release);
    r.reply = (req) => (req.n === 1 ? { hold: hung } : { status: 200 });
    const endpointId = await endpointFor(r);
    const eventId = await emit('order.created');
    await r.waitFor(2, 10_000);
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'delivered' ? found : null;
    });
    expect(d.attempts).toBe(2);
    expect(d.attempt_history[0]).toMatchObject({ outcome: 'timeout', http_status: null });
    // The 1 s timeout fired (timers may fire a millisecond early against the clock that measures it).
    expect(d.attempt_history[0].response_time).toBeGreaterThanOrEqual(990);
    expect(d.attempt_history[0].error).toContain('1000 ms');
  });

  it('replays a delivery by hand after it gave up, with the same webhook-id', async () => {
    const r = await receiver();
    r.reply = (req) => (req.n <= 3 ? { status: 500 } : { status: 200 });
    const endpointId = await endpointFor(r);
    const eventId = await emit('order.created');
    await r.waitFor(3);
    const failed = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'failed' && found.next_retry === null && found.attempts === 3 ? found : null;
    });
    const replay = await http(`/v3/webhooks/${endpointId}/deliveries/${failed.id}/retry`, { key, method: 'POST' });
    expect(replay.status).toBe(202);
    expect(replay.body.id).toBe(failed.id);
    const [, , , fourth] = await r.waitFor(4);
    expect(fourth!.headers['webhook-id']).toBe(eventId);
    expect(fourth!.verifyError).toBeNull();
    const delivered = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'delivered' ? found : null;
    });
    expect(delivered.attempts).toBe(4);
    const missing = await http(`/v3/webhooks/${endpointId}/deliveries/whd_01jpa83q7s9v1x3z5b7d9f1h3k/retry`, { key, method: 'POST' });
    expect(missing.status).toBe(404);
  });
});
