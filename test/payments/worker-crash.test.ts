import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { cardBody, waitForPayment } from './support.ts';

let platform: TestPlatform;
let http: ReturnType<typeof client>;
let key: string;
// Long enough that the kill always lands while the charge is held in the gateway, even on a loaded machine.
const SLOW_MS = '12000';
const workers = workerProcesses(() => platform, { SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS });

beforeAll(async () => {
  // No in-process worker: the workers are child processes this file can kill.
  platform = await startTestPlatform({ env: { PAYMENTS_SYNC_WAIT_MS: '1000', SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS } });
  http = client(platform.url);
  key = await platform.newKey();
});
afterAll(async () => {
  workers.killAll();
  await platform?.close();
});

describe('a worker killed mid-charge', () => {
  it('completes the payment once on another worker: one gateway charge, one event', async () => {
    const first = await workers.start();
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

    await workers.start();
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
