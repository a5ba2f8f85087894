import { afterEach, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { cardBody, waitForPayment } from './support.ts';
import { activitySteps } from '../support/histories.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
// The gateway holds the slow card's charge far longer than the kill takes, even on a loaded machine;
// once the worker is dead the test ends the hold (the gateway answers), so nothing waits it out.
const SLOW_MS = '60000';
// The workers poll the payments queue only: all a payment needs.
const workers = workerProcesses(() => platform, { SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS, WORKER_AREAS: 'payments' });

// No in-process worker: the workers are child processes this file can kill. The request's wait is
// the charge's local attempt (workflows/payments/payment.ts): long enough to kill a worker inside it.
usePlatform({ env: { PAYMENTS_SYNC_WAIT_MS: '5000', SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS } }, (t) => ({ platform, http, key } = t));

/** Resolves once the gateway holds a charge for `amount` (the slow card keeps it there); its idempotency key. */
async function chargeInGateway(amount: number): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await platform.sql<{ idempotency_key: string }>('select idempotency_key from sandbox_gateway_charges where amount = $1', [amount]);
    if (row) return row.idempotency_key;
    if (Date.now() > deadline) throw new Error('the charge never reached the gateway');
    await new Promise((r) => setTimeout(r, 50));
  }
}
// Each test starts its own workers: those of the test before it must not take its workflow tasks.
afterEach(() => workers.killAll());

describe('a worker killed mid-charge', () => {
  it('completes the payment once on another worker: one gateway charge, one event', async () => {
    // The local attempt runs out with the request's wait (202); the charge activity is killed.
    const first = await workers.start();
    // The replacement gets ready (but does not poll) while the first worker works and the charge
    // it held times out.
    const replacement = workers.standby();
    const res = await http('/v3/payments/process', { key, body: { amount: 5000, currency: 'USD', payment_method: cardBody('4000000000007775') } });
    expect(res.status).toBe(202);
    const id = res.body.id as string;

    // Wait until the charge is in the gateway (the slow card holds it there), then kill the worker.
    const deadline = Date.now() + 20_000;
    while ((await platform.sql('select 1 from sandbox_gateway_charges where idempotency_key = $1', [`${id}:charge`])).length === 0) {
      if (Date.now() > deadline) throw new Error('the charge never reached the gateway');
      await new Promise((r) => setTimeout(r, 100));
    }
    await workers.kill(first);
    expect((await http(`/v3/payments/${id}/status`, { key })).body.status).toBe('processing');
    // The gateway finishes the charge it held; the worker that waited for the answer is gone.
    await platform.sql('update sandbox_gateway_charges set completes_at = now() where idempotency_key = $1', [`${id}:charge`]);

    await replacement.start();
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

  it('killed inside the local attempt: the next worker runs the first workflow task again; one charge, and a same-key retry gets the payment', async () => {
    const first = await workers.start();
    const replacement = workers.standby();
    const amount = 4321;
    const request = () => http('/v3/payments/process', {
      key, headers: { 'Idempotency-Key': 'crash-inside-local-attempt' },
      body: { amount, currency: 'USD', payment_method: cardBody('4000000000007775') },
    });
    const answer = request();
    const chargeKey = await chargeInGateway(amount);
    const id = chargeKey.replace(/:charge$/, '');
    await workers.kill(first);
    // The first workflow task died with the worker: nothing of it is in the history yet.
    await platform.sql('update sandbox_gateway_charges set completes_at = now() where idempotency_key = $1', [chargeKey]);
    await replacement.start();

    // The server gives the task to the replacement after the workflow-task timeout (10 s), past
    // the request's deadline: 503 then (or 201 on a fast machine), and the retry gets the payment.
    const res = await answer;
    expect([201, 503]).toContain(res.status);
    await waitForPayment(http, key, id, (p) => p.status !== 'processing', 45_000);
    const retry = await request();
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ id, status: 'succeeded', amount });
    if (res.status === 201) expect(res.body.id).toBe(id);

    expect(await platform.sql('select attempts from sandbox_gateway_charges where idempotency_key = $1', [chargeKey])).toEqual([{ attempts: 1 }]);
    expect(await platform.sql('select count(*)::int as n from payments where id = $1', [id])).toEqual([{ n: 1 }]);
    const events = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [id]);
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded']);
    const history = await platform.temporal.client.workflow.getHandle(`payment-${id}`).fetchHistory();
    expect(history.events!.some((e) => e.workflowTaskTimedOutEventAttributes)).toBe(true);
    expect(activitySteps(history)).toEqual([['recordPayment', 'local'], ['chargePayment', 'local']]);
  });
});
