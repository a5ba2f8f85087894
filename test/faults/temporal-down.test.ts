import { describe, expect, it } from 'vitest';
import { newCustomer, newPlan } from '../billing/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { TcpProxy } from '../support/tcp-proxy.ts';
import { useProxiedPlatform, type Http } from '../support/use-platform.ts';

// A second API reaches the shared Temporal server through a proxy the test cuts: Temporal "goes
// down" for that API alone, right after it was seen up (no cached "down" to answer from).
let platform: TestPlatform;
let proxy: TcpProxy;
let http: Http;
let key: string;
let customer: string;
let plan: string;

useProxiedPlatform('temporal', { worker: true, env: { TEMPORAL_CALL_TIMEOUT_MS: '4000' } }, async (t) => {
  ({ platform, proxy, http, key } = t);
  customer = await newCustomer(http, key);
  plan = (await newPlan(http, key, { amount: 1000 })).id;
});

const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const out = await f();
  return [out, performance.now() - t0];
};
const subscriptionBody = () => ({ customer_id: customer, plan_id: plan, auto_collection: false });

describe('while Temporal is down', () => {
  let subscriptionId: string;

  it('works through the proxy before the cut', async () => {
    const res = await http('/v3/subscriptions', { key, body: subscriptionBody() });
    expect(res.status, res.text).toBe(201);
    subscriptionId = res.body.id;
  });

  for (const mode of ['hang', 'refuse'] as const) {
    it(`answers workflow-backed routes with 503 within 5 s and /readyz within 1 s (${mode})`, async () => {
      // Seen up just now: the API does not know yet that it is down.
      expect((await http(`/v3/subscriptions/${subscriptionId}`, { key })).status).toBe(200);
      await proxy.cut(mode);
      try {
        const [created, ms] = await timed(() => http('/v3/subscriptions', { key, headers: { 'idempotency-key': `t-down-${mode}` }, body: subscriptionBody() }));
        expect(created.status, created.text).toBe(503);
        expect(created.headers.get('content-type')).toContain('application/problem+json');
        expect(created.body.code).toBe('service_unavailable');
        expect(Number(created.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(ms).toBeLessThan(5000);

        const [canceled, cancelMs] = await timed(() => http(`/v3/subscriptions/${subscriptionId}/cancel`, { key, body: {} }));
        expect(canceled.status, canceled.text).toBe(503);
        expect(cancelMs).toBeLessThan(5000);

        const [ready, readyMs] = await timed(() => http('/readyz'));
        expect(ready.status).toBe(503);
        expect(ready.body.checks).toMatchObject({ postgres: true, temporal: false });
        expect(ready.body.detail).toMatch(/Temporal/);
        expect(readyMs).toBeLessThan(1500);
      } finally {
        await proxy.restore();
      }
    });
  }

  it('keeps the key free, and the retry after the outage creates the subscription', async () => {
    // Back up: until the API's next probe (at most 2 s) the client may be told 503 again; never 409.
    const send = () => http('/v3/subscriptions', { key, headers: { 'idempotency-key': 't-down-hang' }, body: subscriptionBody() });
    const deadline = Date.now() + 15_000;
    let res = await send();
    while (res.status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250)); // a client's retry interval, not a wait for a state
      res = await send();
    }
    expect(res.status, res.text).toBe(201);
    const replay = await send();
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(res.body.id);
    expect(await platform.sql('select 1 from subscriptions where id = $1', [res.body.id])).toHaveLength(1);
  });
});
