import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { dispatchPendingEvents, type DispatchDeps } from '../../domain/events/dispatch.ts';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import { webhookConsumer } from '../../domain/webhooks/consumer.ts';
import { createLogger } from '../../platform/logger.ts';
import { eventClaimsLost } from '../../platform/metrics.ts';
import type { EventConsumer, FirstStepContext } from '../../domain/events/consumers.ts';
import type { Limiter } from '../../platform/concurrency.ts';
import { startEventDispatchTrigger } from '../../worker/event-dispatch.ts';
import { dispatcherWorkflowId } from '../../workflows/platform/shared.ts';
import { taskQueueName } from '../../platform/temporal.ts';
import type { TestPlatform } from '../support/platform.ts';
import { deferred } from '../support/deferred.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

/**
 * Dispatcher passes side by side (several per process on notifications, in several processes, and
 * the sweeper's activity): each claims the events it takes, so two passes never take one event,
 * and the events of a pass that died are taken again once its claim has expired. No worker runs
 * here: the test runs the passes itself, with the webhooks consumer (first attempts over HTTP to
 * a real receiver, records in PostgreSQL).
 */
let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
const receivers: Receiver[] = [];

usePlatform({ worker: false, ownAccount: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } }, (t) => ({ platform, http, accountId, key } = t));
afterAll(async () => {
  for (const r of receivers) await r.close();
});

function deps(claimMs = 10_000, logger = createLogger('error')): DispatchDeps {
  return {
    orm: platform.orm, temporal: platform.temporal.client, logger, consumers: [webhookConsumer], claimMs,
    taskQueue: (area) => taskQueueName(platform.taskQueuePrefix, area, platform.config.TEMPORAL_TASK_QUEUES),
    services: { orm: platform.orm, config: platform.config, logger } as unknown as FirstStepContext['services'],
  };
}

async function endpointWithReceiver(): Promise<{ receiver: Receiver; endpointId: string }> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const res = await http('/v3/webhooks', { key, body: { url: receiver.url, events: ['order.created'] } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secrets = [res.body.secret];
  return { receiver, endpointId: res.body.id };
}

async function recordOrders(n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const em = scopedEm(platform.orm, { accountId, livemode: false });
    ids.push(recordEvent(em, { accountId, livemode: false }, { type: 'order.created', object: { id: `ord_${tag}_${i}`, object: 'order' } }).id);
    await em.flush();
  }
  return ids;
}

async function undispatched(ids: string[]): Promise<number> {
  const [row] = await platform.sql<{ n: number }>('select count(*)::int as n from events where id = any($1) and dispatched_at is null', [ids]);
  return row!.n;
}

describe('dispatcher passes at once', () => {
  it('never deliver one event twice to one endpoint, and deliver every event', async () => {
    const a = await endpointWithReceiver();
    const b = await endpointWithReceiver();
    // Slow answers, so that the passes overlap for their whole length.
    for (const r of [a.receiver, b.receiver]) r.reply = () => ({ hold: new Promise((resolve) => setTimeout(resolve, 50)) });
    const ids = await recordOrders(40, 'overlap');

    // Six passes at once, each taking up to 5 events and going on while there are more.
    const d = deps();
    const claimed: number[] = [];
    await Promise.all(Array.from({ length: 6 }, async () => {
      for (;;) {
        const result = await dispatchPendingEvents(d, 5);
        claimed.push(result.events);
        if (result.events === 0) break;
      }
    }));

    expect(claimed.reduce((sum, n) => sum + n, 0)).toBe(ids.length);
    expect(await undispatched(ids)).toBe(0);
    for (const { receiver, endpointId } of [a, b]) {
      const got = receiver.received.map((r) => r.headers['webhook-id']);
      expect(got.toSorted()).toEqual(ids.toSorted());
      expect(receiver.received.every((r) => r.verifyError === null)).toBe(true);
      const [records] = await platform.sql<{ n: number; attempts: number }>(
        `select count(*)::int as n, sum(attempts)::int as attempts from webhook_deliveries where endpoint_id = $1 and status = 'delivered'`, [endpointId]);
      expect(records).toEqual({ n: ids.length, attempts: ids.length });
    }
  });

  it("leave an event another pass holds alone, and take it again once that pass's claim expires", async () => {
    const { receiver, endpointId } = await endpointWithReceiver();
    const [eventId] = await recordOrders(1, 'crashed');

    // A pass that claims the event and dies before sending anything (its process was killed): its
    // claim stays, with a lease it no longer renews.
    await platform.sql(
      `update events set dispatch_claim = 'dead-pass', dispatch_claimed_until = clock_timestamp() + interval '1 minute' where id = $1`, [eventId]);
    const d = deps();
    expect((await dispatchPendingEvents(d, 10)).events).toBe(0);
    expect(receiver.received).toHaveLength(0);
    expect(await undispatched([eventId!])).toBe(1);

    // Once the lease has run out (its time moved, rather than waited for), the next pass takes
    // the event and delivers it, once.
    await platform.sql(`update events set dispatch_claimed_until = clock_timestamp() - interval '1 millisecond' where id = $1`, [eventId]);
    expect((await dispatchPendingEvents(d, 10)).events).toBe(1);
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([eventId]);
    expect(await undispatched([eventId!])).toBe(0);
    const [claim] = await platform.sql('select dispatch_claim, dispatch_claimed_until from events where id = $1', [eventId]);
    expect(claim).toEqual({ dispatch_claim: null, dispatch_claimed_until: null });
    const [record] = await platform.sql('select status, attempts from webhook_deliveries where event_id = $1 and endpoint_id = $2', [eventId, endpointId]);
    expect(record).toEqual({ status: 'delivered', attempts: 1 });
  });

  it('a pass that outlived its claim makes none of the attempts it had not begun; the pass that took the events makes them', async () => {
    const { receiver, endpointId } = await endpointWithReceiver();
    const held = deferred();
    receiver.reply = () => ({ hold: held.promise });
    const ids = await recordOrders(40, 'stalled');

    // A pass with a short lease (renewed every 100 ms): 32 attempts begin at once and hang; then
    // another pass takes the events (their claim is rewritten), and the first pass's renewal finds out.
    const warnings: Record<string, unknown>[] = [];
    const lines = { write: (line: string) => warnings.push(JSON.parse(line) as Record<string, unknown>) };
    const lostBefore = (await eventClaimsLost.get()).values[0]?.value ?? 0;
    const stalled = dispatchPendingEvents(deps(300, createLogger('warn', {}, { out: lines, err: lines })), 50);
    await receiver.waitFor(32, 20_000);
    await platform.sql(`update events set dispatch_claim = 'other-pass' where id = any($1)`, [ids]);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    held.resolve();
    const result = await stalled;
    expect(result.events).toBe(0);
    expect(receiver.received).toHaveLength(32);
    expect(await undispatched(ids)).toBe(ids.length);
    // The loss is counted per event and told once, not in a line per event.
    expect((await eventClaimsLost.get()).values[0]?.value).toBe(lostBefore + ids.length);
    const told = warnings.filter((w) => w.msg === 'event claims lost (the pass outlived its lease); another pass has the events');
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ lost: ids.length, claim_ms: 300 });
    expect(ids).toEqual(expect.arrayContaining(told[0]!.event_ids as string[]));

    // The other pass (its claim now expired) makes the 8 attempts, and none of the 32 again.
    await platform.sql(`update events set dispatch_claimed_until = clock_timestamp() - interval '1 millisecond' where id = any($1)`, [ids]);
    expect((await dispatchPendingEvents(deps(), 50)).events).toBe(ids.length);
    expect(receiver.received.map((r) => r.headers['webhook-id']).toSorted()).toEqual(ids.toSorted());
    const [records] = await platform.sql<{ n: number; attempts: number }>(
      `select count(*)::int as n, sum(attempts)::int as attempts from webhook_deliveries where endpoint_id = $1 and status = 'delivered'`, [endpointId]);
    // Each delivered once; the 8 the first pass had counted (its records were written for the
    // whole pass before any attempt) but not sent count one attempt more than they were sent.
    expect(records).toEqual({ n: ids.length, attempts: ids.length + 8 });
  });

  it('a pass that died mid-attempt: the next one sends the same webhook-id again, to one delivery record', async () => {
    const { receiver, endpointId } = await endpointWithReceiver();
    const [eventId] = await recordOrders(1, 'midway');
    // The dead pass had counted its attempt (the record is pending) and then died with its claim.
    await platform.sql(
      `update events set dispatch_claim = 'dead-pass', dispatch_claimed_until = clock_timestamp() - interval '1 millisecond' where id = $1`, [eventId]);
    await platform.sql(
      `insert into webhook_deliveries (id, account_id, livemode, endpoint_id, event_id, event_type, workflow_id, test, status, attempts, created_at, updated_at)
       values ('whd_deadpass0000000000000000', $1, false, $2, $3, 'order.created', 'wf', false, 'pending', 1, now(), now())`, [accountId, endpointId, eventId]);

    expect((await dispatchPendingEvents(deps(), 10)).events).toBe(1);
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([eventId]);
    const rows = await platform.sql('select status, attempts from webhook_deliveries where event_id = $1 and endpoint_id = $2', [eventId, endpointId]);
    expect(rows).toEqual([{ status: 'delivered', attempts: 2 }]);
  });

  /** A worker process's trigger whose passes plan one workflow start per event (as order.created starts the order's workflow), every start held until `release`: a saturated Temporal server. */
  async function heldStartsTrigger(opts: { passes: number; waitingPasses: number; tag: string }) {
    const starter: EventConsumer = {
      name: 'test-starts',
      plan: async (event) => [{ workflowType: 'handoffTestWorkflow', workflowId: `handoff-${event.id}`, area: 'platform', args: [] }],
    };
    const gate = deferred();
    const release = () => gate.resolve();
    const held = { waiting: 0 };
    const startLimit: Limiter = async (fn) => {
      held.waiting++;
      await gate.promise;
      return fn();
    };
    // A worker process's client (on its native connection, as eager starts need).
    const connection = await NativeConnection.connect({ address: platform.config.TEMPORAL_ADDRESS });
    const client = new Client({ connection, namespace: platform.temporal.namespace });
    const d = { ...deps(), temporal: client, consumers: [webhookConsumer, starter], startLimit };
    const prefix = `${platform.taskQueuePrefix}-${opts.tag}`;
    const trigger = await startEventDispatchTrigger({
      orm: platform.orm, client, taskQueuePrefix: prefix, taskQueue: `${opts.tag}-sweeper`,
      sweepMs: 60_000, logger: createLogger('error'), passes: opts.passes, batchSize: 5, waitingPasses: opts.waitingPasses,
      dispatch: (batchSize, planned) => dispatchPendingEvents({ ...d, planned }, batchSize),
    });
    const started = (ids: string[]) => Promise.all(ids.map((id) => platform.temporal.client.workflow.getHandle(`handoff-${id}`).describe()));
    return {
      held, release, started,
      async close(ids: string[]) {
        release();
        await trigger.stop();
        await Promise.all(ids.map((id) => platform.temporal.client.workflow.getHandle(`handoff-${id}`).terminate().catch(() => undefined)));
        await platform.temporal.client.workflow.getHandle(dispatcherWorkflowId(prefix)).terminate().catch(() => undefined);
        await connection.close();
      },
    };
  }

  it("a worker process claims at the pace of planning: later events' first attempts go out while earlier passes' workflow starts wait", async () => {
    const { receiver } = await endpointWithReceiver();
    const ids = await recordOrders(30, 'handoff'); // the trigger finds them when it starts listening
    const t = await heldStartsTrigger({ passes: 2, waitingPasses: 40, tag: 'handoff' });
    try {
      // Six batches for two passes: each hands its place on once planned, so all 30 first
      // attempts are made while no start has gone out.
      await receiver.waitFor(ids.length);
      expect(receiver.received.map((r) => r.headers['webhook-id']).toSorted()).toEqual(ids.toSorted());
      await vi.waitFor(() => expect(t.held.waiting).toBe(ids.length), { timeout: 10_000 }); // the last pass finishing its first steps
      expect(await undispatched(ids)).toBe(ids.length); // marked only once their starts are made

      t.release();
      await vi.waitFor(async () => expect(await undispatched(ids)).toBe(0), { timeout: 10_000, interval: 100 });
      expect((await t.started(ids)).map((w) => w.type)).toEqual(ids.map(() => 'handoffTestWorkflow'));
      expect(receiver.received).toHaveLength(ids.length);
    } finally {
      await t.close(ids);
    }
  });

  it('past EVENT_DISPATCH_WAITING_PASSES passes waiting for their starts, a worker process claims no more until one is done', async () => {
    const { receiver } = await endpointWithReceiver();
    const ids = await recordOrders(30, 'waiting'); // the trigger finds them when it starts listening
    const t = await heldStartsTrigger({ passes: 2, waitingPasses: 1, tag: 'waiting' });
    try {
      // The two passes (5 events each) plan and wait; with one allowed to wait, neither claims again.
      await receiver.waitFor(5);
      expect(t.held.waiting).toBeLessThanOrEqual(10);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.received.length).toBeLessThanOrEqual(10);
      expect(await undispatched(ids)).toBe(ids.length);

      t.release();
      await receiver.waitFor(ids.length);
      await vi.waitFor(async () => expect(await undispatched(ids)).toBe(0), { timeout: 10_000, interval: 100 });
      expect(receiver.received.map((r) => r.headers['webhook-id']).toSorted()).toEqual(ids.toSorted());
      expect(await t.started(ids)).toHaveLength(ids.length);
    } finally {
      await t.close(ids);
    }
  });
});
