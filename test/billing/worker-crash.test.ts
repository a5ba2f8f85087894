import { afterAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { card, invoices, newClock, newCustomer, newPlan, subscription, type Http } from './support.ts';
import { usePlatform } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
// The first worker's gateway holds the slow card's charge far longer than the kill takes, even on a
// loaded machine; once that worker is dead the test ends the hold (the gateway answers). The
// replacement's gateway answers the next period's charge at once.
const SLOW_MS = '60000';
// The workers poll the billing and payments queues only: all a subscription's cycles need.
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'billing,payments' });

// No in-process worker: the workers are child processes this file can kill.
usePlatform({ env: { SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS } }, (t) => ({ platform, http, key } = t));
afterAll(() => workers.killAll());

describe('a worker killed mid-cycle', () => {
  it('loses and duplicates nothing: one invoice per period, one charge per invoice, one event each', async () => {
    const first = await workers.start({ SANDBOX_GATEWAY_SLOW_CARD_MS: SLOW_MS });
    // The replacement gets ready (but does not poll) while the first worker works and the charge
    // it held times out.
    const replacement = workers.standby({ SANDBOX_GATEWAY_SLOW_CARD_MS: '0' });
    const customer = await newCustomer(http, key);
    const plan = await newPlan(http, key, { amount: 4100 });
    const clock = await newClock(http, key, '2025-01-01T00:00:00Z');
    const created = await http('/v3/subscriptions', {
      key, body: { customer_id: customer, plan_id: plan.id, auto_collection: true, payment_method: card('4000000000007775'), test_clock: clock },
    });
    expect(created.status, created.text).toBe(201);
    const sub = created.body;

    // Two periods end; kill the worker while the first period's charge is in the gateway.
    const advancing = http(`/v3/test_clocks/${clock}/advance`, { key, body: { frozen_time: '2025-03-01T01:00:00Z' } });
    const deadline = Date.now() + 20_000;
    while ((await platform.sql(`select 1 from sandbox_gateway_charges`)).length === 0) {
      if (Date.now() > deadline) throw new Error('the first charge never reached the gateway');
      await new Promise((r) => setTimeout(r, 50));
    }
    await workers.kill(first);
    // The gateway finishes the charge it held; the worker that waited for the answer is gone.
    await platform.sql('update sandbox_gateway_charges set completes_at = now()');
    await replacement.start();

    const advanced = await advancing;
    expect(advanced.status, advanced.text).toBe(200);
    const all = await invoices(http, key, sub.id);
    expect(all.map((i) => [i.period_start.slice(0, 10), i.status, i.attempt_count])).toEqual([['2025-01-01', 'paid', 1], ['2025-02-01', 'paid', 1]]);
    expect((await subscription(http, key, sub.id)).status).toBe('active');

    const charges = await platform.sql<{ idempotency_key: string; attempts: number }>('select idempotency_key, attempts from sandbox_gateway_charges order by idempotency_key');
    expect(charges.map((c) => c.idempotency_key).sort()).toEqual(all.map((i) => `${i.last_payment_id}:charge`).sort());
    expect(charges.every((c) => c.attempts === 1)).toBe(true);
    // The first charge really ran twice (its second attempt on the new worker), with the same gateway key.
    const history = await platform.temporal.client.workflow.getHandle(`payment-${all[0].last_payment_id}`).fetchHistory();
    const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => Number(e.activityTaskStartedEventAttributes!.attempt));
    expect(Math.max(...started)).toBeGreaterThanOrEqual(2);
    const attempts = await platform.sql<{ n: number }>('select count(*)::int as n from invoice_collection_attempts');
    expect(attempts[0]!.n).toBe(2);
    const events = await platform.sql<{ type: string; n: number }>(
      `select type, count(*)::int as n from events where customer_id = $1 and type not like 'payment.%' group by type order by type`, [customer]);
    expect(events).toEqual([
      { type: 'invoice.created', n: 2 }, { type: 'invoice.paid', n: 2 }, { type: 'subscription.created', n: 1 },
    ]);
  });
});
