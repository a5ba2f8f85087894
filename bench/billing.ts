import { percentile, type Scenario, testCard } from './harness.ts';

const SUBSCRIPTIONS = 25;
const CLIENTS = 5;

/**
 * Billing: subscriptions created per second through update-with-start (tokenize the card, start the
 * workflow, its first activity writes the row), then a year of monthly billing for all of them on one
 * test clock — invoices issued and charged (payment child workflows) per second.
 */
export const scenario: Scenario = {
  name: 'billing: subscriptions created/s and a year of monthly invoices on a test clock',
  async run(platform) {
    const key = await platform.newKey({ type: 'test' });
    const call = async (path: string, body: unknown) => {
      const res = await fetch(platform.url + path, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      const json = await res.json() as Record<string, any>;
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
      return { status: res.status, body: json };
    };
    const customer = (await call('/v3/customers', { email: 'bench@example.com', name: 'Bench' })).body.id;
    const plan = (await call('/v3/plans', { name: 'Bench', currency: 'USD', interval: 'monthly', amount: 1500 })).body.id;
    const clock = (await call('/v3/test_clocks', { frozen_time: '2025-01-01T00:00:00Z' })).body.id;
    const card = testCard();

    const latencies: number[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (next < SUBSCRIPTIONS) {
        next++;
        const t = performance.now();
        await call('/v3/subscriptions', { customer_id: customer, plan_id: plan, auto_collection: true, payment_method: card, test_clock: clock });
        latencies.push(performance.now() - t);
      }
    }));
    const createSeconds = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);

    const t1 = performance.now();
    const advanced = await call(`/v3/test_clocks/${clock}/advance`, { frozen_time: '2026-01-01T01:00:00Z' });
    const expected = SUBSCRIPTIONS * 12;
    for (;;) {
      const [row] = await platform.sql<{ n: string }>(`select count(*) as n from invoices where status = 'paid'`);
      if (Number(row?.n ?? 0) >= expected) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const yearSeconds = (performance.now() - t1) / 1000;
    const [charges] = await platform.sql<{ n: string }>(`select count(*) as n from sandbox_gateway_charges`);
    return {
      subscriptions: SUBSCRIPTIONS,
      clients: CLIENTS,
      subscriptions_created_per_sec: Math.round((SUBSCRIPTIONS / createSeconds) * 10) / 10,
      create_p50_ms: Math.round(percentile(latencies, 50)),
      create_p99_ms: Math.round(percentile(latencies, 99)),
      advance_status: advanced.status,
      year_of_billing_seconds: Math.round(yearSeconds * 10) / 10,
      invoices_paid: expected,
      invoices_per_sec: Math.round(expected / yearSeconds),
      gateway_charges: Number(charges?.n ?? 0),
    };
  },
};
