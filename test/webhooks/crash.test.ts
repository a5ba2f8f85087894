import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { eventually, startReceiver, type Receiver } from './support/receiver.ts';

/**
 * A worker killed (SIGKILL) while the receiver holds its request: Temporal runs the attempt again
 * on a new worker, and the receiver gets the same `webhook-id`.
 */
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_HEARTBEAT_TIMEOUT_MS: '1500', WEBHOOK_TIMEOUT_MS: '30000',
  WEBHOOK_RETRY_SCHEDULE: '100ms', EVENT_DISPATCH_SWEEP_MS: '1000', LOG_LEVEL: 'error',
};
let platform: TestPlatform;
const receivers: Receiver[] = [];
const children: ChildProcess[] = [];
const releases: (() => void)[] = [];

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./support/worker-process.ts', import.meta.url))], {
    env: {
      ...process.env, ...ENV, DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE_PREFIX: platform.taskQueuePrefix, WORKFLOW_BUNDLE_PATH: inject('bundlePath'),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('"ready":true')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}) before it was ready`)));
  });
  return child;
}

beforeAll(async () => {
  platform = await startTestPlatform({ worker: false, env: ENV });
});
afterAll(async () => {
  for (const release of releases) release();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const r of receivers) await r.close();
  await platform?.close();
});

describe('a worker that dies mid-delivery', () => {
  /**
   * `failFirst`: the first attempt (a local activity) fails fast with a 500, so the request the
   * worker dies on is a retry (a regular activity, noticed by its heartbeat timeout); otherwise the
   * worker dies on the first attempt (noticed when its workflow task times out).
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

    const worker = await startWorkerProcess();
    const held = new Promise<void>((resolve) => {
      releases.push(resolve);
    });
    const heldAt = failFirst ? 2 : 1;
    receiver.reply = (req) => (req.n < heldAt ? { status: 500 } : req.n === heldAt ? { hold: held } : { status: 200 });

    const em = scopedEm(platform.orm, { accountId, livemode: false });
    const event = recordEvent(em, { accountId, livemode: false }, { type: 'order.created', object: { id: 'ord_crash', object: 'order' } });
    await em.flush();

    await receiver.waitFor(heldAt);
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));

    const replacement = await startWorkerProcess();
    const received = await receiver.waitFor(heldAt + 1, 40_000);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual(Array(heldAt + 1).fill(event.id));
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(received.every((r) => r.verifyError === null)).toBe(true);

    const delivery = await eventually(async () => {
      const res = await http(`/v3/webhooks/${created.body.id}/deliveries`, { key });
      return res.body.deliveries?.[0]?.status === 'delivered' ? res.body.deliveries[0] : null;
    }, 30_000);
    expect(delivery).toMatchObject({ event_id: event.id, attempts: heldAt + 1, http_status: 200 });
    // One delivery record for the (event, endpoint) pair, and nothing sent again afterwards.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(heldAt + 1);
    const rows = await platform.sql('select count(*)::int as n from webhook_deliveries where event_id = $1', [event.id]);
    expect(rows[0]!.n).toBe(1);
    replacement.kill('SIGKILL');
    await new Promise((resolve) => replacement.once('exit', resolve));
  }

  it('during a retry: the attempt runs again on a new worker, with the same webhook-id', () => killMidDelivery(true));
  it('during the first attempt: the same, once the workflow task times out', () => killMidDelivery(false));
});
