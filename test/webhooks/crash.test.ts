import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordEvent } from '../../domain/events/outbox.ts';
import { scopedEm } from '../../domain/scope.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { eventually, startReceiver, type Receiver } from './support/receiver.ts';

/**
 * A worker killed (SIGKILL) while the receiver holds its request: the attempt's heartbeat stops,
 * Temporal runs the attempt again on a new worker, and the receiver gets the same `webhook-id`.
 */
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_HEARTBEAT_TIMEOUT_MS: '1500', WEBHOOK_TIMEOUT_MS: '30000',
  WEBHOOK_RETRY_SCHEDULE: '100ms', EVENT_DISPATCH_SWEEP_MS: '1000', LOG_LEVEL: 'error',
};
let platform: TestPlatform;
let receiver: Receiver;
const children: ChildProcess[] = [];
let releaseHeld: () => void = () => undefined;

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
  receiver = await startReceiver();
});
afterAll(async () => {
  releaseHeld();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await receiver?.close();
  await platform?.close();
});

describe('a worker that dies mid-delivery', () => {
  it('is replaced, and the delivery completes with the same webhook-id', async () => {
    const http = client(platform.url);
    const accountId = await platform.newAccount();
    const key = await platform.newKey({ accountId });
    const created = await http('/v3/webhooks', { key, body: { url: receiver.url, events: ['order.created'] } });
    expect(created.status).toBe(201);
    receiver.secrets = [created.body.secret];

    const first = await startWorkerProcess();
    const held = new Promise<void>((resolve) => {
      releaseHeld = resolve;
    });
    receiver.reply = (req) => (req.n === 1 ? { hold: held } : { status: 200 });

    const em = scopedEm(platform.orm, { accountId, livemode: false });
    const event = recordEvent(em, { accountId, livemode: false }, { type: 'order.created', object: { id: 'ord_crash', object: 'order' } });
    await em.flush();

    const [attempt1] = await receiver.waitFor(1);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    releaseHeld(); // the dead worker's connection is gone: nobody reads this answer

    await startWorkerProcess();
    const [, attempt2] = await receiver.waitFor(2, 30_000);
    expect(attempt1!.headers['webhook-id']).toBe(event.id);
    expect(attempt2!.headers['webhook-id']).toBe(event.id);
    expect(attempt2!.body).toBe(attempt1!.body);
    expect(attempt2!.verifyError).toBeNull();

    const delivery = await eventually(async () => {
      const res = await http(`/v3/webhooks/${created.body.id}/deliveries`, { key });
      return res.body.deliveries?.[0]?.status === 'delivered' ? res.body.deliveries[0] : null;
    }, 30_000);
    expect(delivery).toMatchObject({ event_id: event.id, attempts: 2, http_status: 200 });
    // One delivery record for the (event, endpoint) pair, and nothing sent a third time.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(2);
    const rows = await platform.sql('select count(*)::int as n from webhook_deliveries where event_id = $1', [event.id]);
    expect(rows[0]!.n).toBe(1);
  });
});
