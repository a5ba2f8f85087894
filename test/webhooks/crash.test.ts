import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import { deliveryWorkflowId } from '../../workflows/webhooks/shared.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { workerProcesses, type StandbyWorker } from '../support/worker-processes.ts';
import { eventually, startReceiver, type Receiver } from './support/receiver.ts';
import { usePlatform } from '../support/use-platform.ts';

/**
 * A worker killed (SIGKILL) while the receiver holds its request: Temporal runs the attempt again
 * on a new worker (the first attempt is made by the outbox dispatcher's activity, a retry by the
 * delivery workflow's), and the receiver gets the same `webhook-id`.
 */
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_HEARTBEAT_TIMEOUT_MS: '1500', WEBHOOK_TIMEOUT_MS: '30000',
  WEBHOOK_RETRY_SCHEDULE: '100ms', LOG_LEVEL: 'error',
  // The dispatcher runs when a commit nudges it, not every second too (a kill lands in its activity
  // only when the first attempt is held; then it is noticed after 5 s, the dispatcher's floor).
  EVENT_DISPATCH_SWEEP_MS: '60000',
  // A worker that dies during a workflow task (the first attempt is a local activity, run inside one;
  // or the dispatcher's) is noticed after 4 s, not 10.
  EVENT_WORKFLOW_TASK_TIMEOUT_MS: '4000',
};
let platform: TestPlatform;
const receivers: Receiver[] = [];
// The workers poll the queues of the outbox dispatcher (platform) and of deliveries (webhooks) only.
const workers = workerProcesses(() => platform, { ...ENV, WORKER_AREAS: 'platform,webhooks' });
const releases: (() => void)[] = [];
/** The one worker polling; each test kills it and a standby (made ready ahead) takes over. */
let current: ChildProcess;
const standbys: StandbyWorker[] = [];

usePlatform({ worker: false, env: ENV }, async (t) => {
  ({ platform } = t);
  standbys.push(workers.standby(), workers.standby());
  current = await workers.start();
});
afterAll(async () => {
  for (const release of releases) release();
  await workers.killAll();
  for (const r of receivers) await r.close();
});

describe('a worker that dies mid-delivery', () => {
  /**
   * `failFirst`: the first attempt (made by the dispatcher) fails fast with a 500, so the request
   * the worker dies on is a retry (the delivery workflow's activity, noticed by its heartbeat
   * timeout); otherwise the worker dies on the first attempt, in the dispatcher's activity (noticed
   * by its heartbeat timeout too; the event is still undispatched, so the pass runs again).
   */
  async function killMidDelivery(failFirst: boolean) {
    const http = client(platform.url);
    const accountId = await platform.newAccount();
    const key = await platform.newKey({ accountId });
    const receiver = await startReceiver();
    receivers.push(receiver);
    const created = await http('/v3/webhooks', { key, body: { url: receiver.url, events: ['order.created'] } });
    expect(created.status).toBe(201);
    receiver.secrets = [created.body.secret];

    const worker = current;
    const held = new Promise<void>((resolve) => {
      releases.push(resolve);
    });
    const heldAt = failFirst ? 2 : 1;
    receiver.reply = (req) => (req.n < heldAt ? { status: 500 } : req.n === heldAt ? { hold: held } : { status: 200 });

    const em = scopedEm(platform.orm, { accountId, livemode: false });
    const event = recordEvent(em, { accountId, livemode: false }, { type: 'order.created', object: { id: 'ord_crash', object: 'order' } });
    await em.flush();

    await receiver.waitFor(heldAt);
    await workers.kill(worker);

    current = await standbys.shift()!.start();
    const received = await receiver.waitFor(heldAt + 1, 40_000);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual(Array(heldAt + 1).fill(event.id));
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(received.every((r) => r.verifyError === null)).toBe(true);

    const delivery = await eventually(async () => {
      const res = await http(`/v3/webhooks/${created.body.id}/deliveries`, { key });
      return res.body.deliveries?.[0]?.status === 'delivered' ? res.body.deliveries[0] : null;
    }, 30_000);
    expect(delivery).toMatchObject({ event_id: event.id, attempts: heldAt + 1, http_status: 200 });
    // One delivery record for the (event, endpoint) pair, and nothing sent again: the event is
    // dispatched and the delivery workflow (when the first attempt failed) has finished, so no
    // attempt can still come.
    await eventually(async () => (await platform.sql('select 1 from events where id = $1 and dispatched_at is not null', [event.id])).length > 0, 30_000);
    if (failFirst) await platform.temporal.client.workflow.getHandle(deliveryWorkflowId(event.id, created.body.id)).result();
    expect(receiver.received).toHaveLength(heldAt + 1);
    const rows = await platform.sql('select count(*)::int as n from webhook_deliveries where event_id = $1', [event.id]);
    expect(rows[0]!.n).toBe(1);
  }

  it('during a retry: the attempt runs again on a new worker, with the same webhook-id', () => killMidDelivery(true));
  it('during the first attempt: the same, once the workflow task times out', () => killMidDelivery(false));
});
