import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { cardBody, waitForPayment } from './support.ts';

let platform: TestPlatform;
let http: ReturnType<typeof client>;
let key: string;
const children: ChildProcess[] = [];
// Long enough that the kill always lands while the charge is held in the gateway, even on a loaded machine.
const SLOW_MS = '12000';

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./worker-process.ts', import.meta.url))], {
    env: {
      ...process.env, DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: platform.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: platform.taskQueuePrefix,
      BUNDLE_PATH: inject('bundlePath'), SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS, LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"ready":true')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  return child;
}

beforeAll(async () => {
  // No in-process worker: the workers are child processes this file can kill.
  platform = await startTestPlatform({ env: { PAYMENTS_SYNC_WAIT_MS: '1000', SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS } });
  http = client(platform.url);
  key = await platform.newKey();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await platform?.close();
});

describe('a worker killed mid-charge', () => {
  it('completes the payment once on another worker: one gateway charge, one event', async () => {
    const first = await startWorkerProcess();
    const res = await http('/v3/payments/process', { key, body: { amount: 5000, currency: 'USD', payment_method: cardBody('4000000000007775') } });
    expect(res.status).toBe(202);
    const id = res.body.id as string;

    // Wait until the charge is in the gateway (the slow card holds it there), then kill the worker.
    const deadline = Date.now() + 20_000;
    while ((await platform.sql('select 1 from sandbox_gateway_charges where idempotency_key = $1', [`${id}:charge`])).length === 0) {
      if (Date.now() > deadline) throw new Error('the charge never reached the gateway');
      await new Promise((r) => setTimeout(r, 100));
    }
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    expect((await http(`/v3/payments/${id}/status`, { key })).body.status).toBe('processing');

    await startWorkerProcess();
    const done = await waitForPayment(http, key, id, (p) => p.status !== 'processing', 45_000);
    expect(done.status).toBe('succeeded');

    const charges = await platform.sql<{ attempts: number }>('select attempts from sandbox_gateway_charges where idempotency_key = $1', [`${id}:charge`]);
    expect(charges).toEqual([{ attempts: 1 }]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded']);
    // The charge activity really ran twice (the second attempt on the new worker).
    const history = await platform.temporal.client.workflow.getHandle(`payment-${id}`).fetchHistory();
    const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
    expect(Math.max(...attempts.map(Number))).toBeGreaterThanOrEqual(2);
  });
});
