import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, newPlan } from '../billing/support.ts';
import { openShop, orderBody, stockOf, stockedProduct, type Shop } from '../commerce/support.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import { LIVENESS_LOCK_CLASS } from '../../domain/idempotency/store.ts';

// An API killed between its idempotency claim and its answer, and an answer lost to a Temporal
// deadline: the retry with the same key returns the one resource that was created, at once.
let platform: TestPlatform;
let http: ReturnType<typeof client>;
let key: string;
let customer: string;
let plan: string;
let shop: Shop;
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'platform,customers,payments,billing,commerce' });
const apis: ChildProcess[] = [];

beforeAll(async () => {
  // No worker in the test process: one runs in a child process, started when a test needs it.
  platform = await startTestPlatform({ env: { TEMPORAL_CALL_TIMEOUT_MS: '1500' } });
  http = client(platform.url);
  key = await platform.newKey();
  customer = await newCustomer(http, key);
  plan = (await newPlan(http, key, { amount: 1000 })).id;
  shop = await openShop(http, key);
  await stockedProduct(http, key, shop, 'CRASH-1', 10);
});
afterAll(async () => {
  for (const a of apis) if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
  await workers.killAll();
  await platform?.close();
});

/** An API process that does the work of a request with an Idempotency-Key and then waits, never answering. */
async function holdingApi(): Promise<{ child: ChildProcess; url: string; holding: Promise<void>; instancesBefore: number }> {
  const instancesBefore = await liveInstances();
  const child = spawn(process.execPath, [fileURLToPath(new URL('../support/api-process.ts', import.meta.url))], {
    env: {
      ...process.env, DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: platform.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: platform.taskQueuePrefix, TEMPORAL_TASK_QUEUES: platform.config.TEMPORAL_TASK_QUEUES,
      LOG_LEVEL: 'warn', API_HOLD_BEFORE_ANSWER: '1',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  apis.push(child);
  let out = '';
  let onHold: () => void = () => undefined;
  const holding = new Promise<void>((resolve) => (onHold = resolve));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /"url":"([^"]+)"/.exec(out);
      if (ready) resolve(ready[1]!);
      if (out.includes('"holding":true')) onHold();
    });
    child.once('exit', (code, signal) => reject(new Error(`api process exited (${code ?? signal}) before it listened`)));
  });
  return { child, url, holding, instancesBefore };
}

/** The API instances alive now: each holds a liveness advisory lock (domain/idempotency/liveness.ts). */
async function liveInstances(): Promise<number> {
  const [row] = await platform.sql<{ n: number }>(
    `select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and classid = $1::oid
        and database = (select oid from pg_database where datname = current_database())`,
    [LIVENESS_LOCK_CLASS],
  );
  return row!.n;
}

/**
 * Kills the API and waits until PostgreSQL has seen its connection go (the server drops the
 * liveness lock a few milliseconds after the process dies), as a client's retry would find it.
 */
async function kill(crashed: { child: ChildProcess; instancesBefore: number }): Promise<void> {
  const exited = new Promise((resolve) => crashed.child.once('exit', resolve));
  crashed.child.kill('SIGKILL');
  await exited;
  for (const until = Date.now() + 5000; await liveInstances() > crashed.instancesBefore;) {
    if (Date.now() > until) throw new Error('the killed API still holds its liveness lock after 5 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const out = await f();
  return [out, performance.now() - t0];
};

describe('a Temporal deadline (503) and then a retry', () => {
  it('creates one subscription: the retry reaches the workflow the first attempt started', async () => {
    const body = { customer_id: customer, plan_id: plan, auto_collection: false };
    const headers = { 'idempotency-key': 'deadline-sub' };
    // No worker polls yet: the workflow is started, but its first activity cannot write the row in time.
    const first = await http('/v3/subscriptions', { key, headers, body });
    expect(first.status, first.text).toBe(503);
    const [claim] = await platform.sql<{ state: string; resource_id: string }>(`select state, resource_id from idempotency_records where key = 'deadline-sub'`);
    expect(claim).toMatchObject({ state: 'released', resource_id: expect.stringMatching(/^sub_/) });
    const started = await platform.temporal.client.workflow.getHandle(`subscription-${claim!.resource_id}`).describe();
    expect(started.status.name).toBe('RUNNING');

    await workers.start();
    // A client retries a 503 with the same key; the fresh worker may need a moment for its first task.
    let retry = await http('/v3/subscriptions', { key, headers, body });
    for (const until = Date.now() + 30_000; retry.status === 503 && Date.now() < until;) {
      retry = await http('/v3/subscriptions', { key, headers, body });
    }
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.id).toBe(claim!.resource_id);
    expect(await platform.sql(`select id from subscriptions where customer_id = $1`, [customer])).toEqual([{ id: claim!.resource_id }]);
  });
});

describe('an API killed between claim and answer', () => {
  it('a subscription: the retry on another API answers at once with the one subscription created', async () => {
    const crashed = await holdingApi();
    const body = { customer_id: customer, plan_id: plan, auto_collection: false, metadata: { crash: 'sub' } };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'crash-sub' };
    void fetch(`${crashed.url}/v3/subscriptions`, { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => undefined);
    await crashed.holding;
    await kill(crashed);
    const [claim] = await platform.sql<{ state: string; resource_id: string }>(`select state, resource_id from idempotency_records where key = 'crash-sub'`);
    expect(claim).toMatchObject({ state: 'in_progress', resource_id: expect.stringMatching(/^sub_/) });

    const [retry, ms] = await timed(() => http('/v3/subscriptions', { key, headers: { 'idempotency-key': 'crash-sub' }, body }));
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.id).toBe(claim!.resource_id);
    expect(ms).toBeLessThan(5000);
    expect(await platform.sql(`select id from subscriptions where metadata->>'crash' = 'sub'`)).toEqual([{ id: claim!.resource_id }]);
    const replay = await http('/v3/subscriptions', { key, headers: { 'idempotency-key': 'crash-sub' }, body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(claim!.resource_id);
  });

  it('an order: the retry answers the one order placed, with its stock reserved once', async () => {
    const crashed = await holdingApi();
    const body = orderBody(shop, [{ sku: 'CRASH-1', quantity: 2 }], { metadata: { crash: 'order' } });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'crash-order' };
    void fetch(`${crashed.url}/v3/orders`, { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => undefined);
    await crashed.holding;
    await kill(crashed);

    const [retry, ms] = await timed(() => http('/v3/orders', { key, headers: { 'idempotency-key': 'crash-order' }, body }));
    expect(retry.status, retry.text).toBe(201);
    expect(ms).toBeLessThan(5000);
    const orders = await platform.sql<{ id: string }>(`select id from orders where metadata->>'crash' = 'order'`);
    expect(orders).toEqual([{ id: retry.body.id }]);
    expect((await stockOf(platform, key, 'CRASH-1')).reserved).toBe(2);
  });

  it('a claim whose owner lives still answers 409 idempotency_key_in_use', async () => {
    const held = await holdingApi();
    const body = { customer_id: customer, plan_id: plan, auto_collection: false, metadata: { crash: 'live' } };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'live-owner' };
    void fetch(`${held.url}/v3/subscriptions`, { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => undefined);
    await held.holding;
    const retry = await http('/v3/subscriptions', { key, headers: { 'idempotency-key': 'live-owner' }, body });
    expect(retry.status, retry.text).toBe(409);
    expect(retry.body.code).toBe('idempotency_key_in_use');
    await kill(held);
    const after = await http('/v3/subscriptions', { key, headers: { 'idempotency-key': 'live-owner' }, body });
    expect(after.status, after.text).toBe(201);
  });
});

describe('an applied transition whose answer was lost', () => {
  for (const kind of ['fulfill', 'cancel'] as const) {
    it(`order ${kind}: the retry with the same key answers 200 with the order, and one event was recorded`, async () => {
      const placed = await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'CRASH-1', quantity: 1 }]) });
      expect(placed.status, placed.text).toBe(201);
      const headers = { 'idempotency-key': `applied-${kind}` };
      const first = await http(`/v3/orders/${placed.body.id}/${kind}`, { key, headers, body: {} });
      expect(first.status, first.text).toBe(200);
      // A crash after the transition, before its answer was stored: the record is gone.
      await platform.sql(`delete from idempotency_records where key = $1`, [`applied-${kind}`]);
      const retry = await http(`/v3/orders/${placed.body.id}/${kind}`, { key, headers, body: {} });
      expect(retry.status, retry.text).toBe(200);
      expect(retry.body).toMatchObject({ id: placed.body.id, status: first.body.status });
      const other = await http(`/v3/orders/${placed.body.id}/${kind}`, { key, headers: { 'idempotency-key': `other-${kind}` }, body: {} });
      expect(other.status, other.text).toBe(409);
      const type = kind === 'fulfill' ? 'order.fulfilled' : 'order.canceled';
      expect(await platform.sql(`select id from events where type = $1 and data::text like $2`, [type, `%${placed.body.id}%`])).toHaveLength(1);
    });
  }

  it('subscription cancel: the retry with the same key answers 200 with the canceled subscription, and one event was recorded', async () => {
    const created = await http('/v3/subscriptions', { key, body: { customer_id: customer, plan_id: plan, auto_collection: false } });
    expect(created.status, created.text).toBe(201);
    const path = `/v3/subscriptions/${created.body.id}/cancel`;
    const headers = { 'idempotency-key': 'applied-sub-cancel' };
    const first = await http(path, { key, headers, body: {} });
    expect(first.status, first.text).toBe(200);
    expect(first.body.status).toBe('canceled');
    await platform.sql(`delete from idempotency_records where key = 'applied-sub-cancel'`);
    const retry = await http(path, { key, headers, body: {} });
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toMatchObject({ id: created.body.id, status: 'canceled', canceled_at: first.body.canceled_at });
    const other = await http(path, { key, headers: { 'idempotency-key': 'other-sub-cancel' }, body: {} });
    expect(other.status, other.text).toBe(409);
    expect(other.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'canceled' });
    expect(await platform.sql(`select id from events where type = 'subscription.canceled' and data->'object'->>'id' = $1`, [created.body.id])).toHaveLength(1);
  });
});
