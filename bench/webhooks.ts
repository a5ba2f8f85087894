import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { recordEvent } from '../domain/events/outbox.ts';
import { scopedEm, type Scope } from '../domain/scope.ts';
import { openBenchShop } from './commerce.ts';
import { autocannonRun, percentile, type Scenario } from './harness.ts';

const EVENTS = 1000;
const ENDPOINTS = 3;
/** Writers recording events at once (each event in its own transaction, as a request would). */
const WRITERS = 20;
const TIMEOUT_MS = 180_000;
/** First, a steady trickle (latency when nothing queues): this many events at this rate. */
const PACED_EVENTS = 100;
const PACED_RATE = 10;
/** Last, the same trickle while this many clients place orders (the dispatcher starts their workflows too). */
const ORDER_CLIENTS = 20;

interface Receipt {
  at: number;
  eventId: string;
  ok: boolean;
}

/** A local receiver that verifies every signature (standardwebhooks) and notes when each event arrived. */
async function startReceiver(receipts: Receipt[]): Promise<{ url: string; setSecret(s: string): void; close(): Promise<void> }> {
  let verifier: Webhook | undefined;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      let ok = true;
      try {
        verifier!.verify(body, req.headers as Record<string, string>);
      } catch {
        ok = false;
      }
      receipts.push({ at, eventId: String(req.headers['webhook-id']), ok });
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    setSecret: (s) => {
      verifier = new Webhook(s);
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Events (payment.succeeded about 50 customers, so customer metrics are computed too), each
 * recorded in its own transaction, fanned out to 3 local endpoints over loopback; every delivery
 * is verified with the standardwebhooks library, and latency is measured from the event's
 * creation to its arrival at the receiver. First 100 events at 10 a second (latency without
 * queueing), then the burst: 1,000 events recorded as fast as 20 writers can (throughput, and
 * latency including the queue), then the trickle again while 20 clients place orders for 10 s
 * (each order's `order.created` has the same dispatcher start its workflow): what an order burst
 * costs the webhooks that share the passes.
 */
export const scenario: Scenario = {
  name: 'webhooks: 1,000 events fanned out to 3 endpoints',
  env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
  async run(platform) {
    const key = await platform.newKey();
    const [keyRow] = await platform.sql<{ account_id: string }>('select account_id from api_keys order by created_at desc limit 1');
    const scope: Scope = { accountId: keyRow!.account_id, livemode: false };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    const receipts: Receipt[][] = [];
    const receivers = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const list: Receipt[] = [];
      receipts.push(list);
      const r = await startReceiver(list);
      const res = await fetch(`${platform.url}/v3/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: r.url, events: ['payment.succeeded'] }) });
      const body = (await res.json()) as { secret: string };
      if (res.status !== 201) throw new Error(`creating an endpoint answered ${res.status}: ${JSON.stringify(body)}`);
      r.setSecret(body.secret);
      receivers.push(r);
    }
    const customers: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await fetch(`${platform.url}/v3/customers`, { method: 'POST', headers, body: JSON.stringify({ email: `bench${i}@example.com`, name: `Bench ${i}` }) });
      customers.push(((await res.json()) as { id: string }).id);
    }

    const createdAt = new Map<string, number>();
    let n = 0;
    const emitOne = async () => {
      const i = n++;
      const em = scopedEm(platform.orm, scope);
      const customerId = customers[i % customers.length]!;
      const event = recordEvent(em, scope, {
        type: 'payment.succeeded', customerId,
        object: { id: `pay_bench_${i}`, object: 'payment', amount: 1000 + i, currency: 'usd', status: 'succeeded', customer_id: customerId },
      });
      await em.flush();
      createdAt.set(event.id, event.createdAt.getTime());
    };
    const received = () => receipts.reduce((sum, r) => sum + r.length, 0);
    const waitFor = async (count: number) => {
      const deadline = Date.now() + TIMEOUT_MS;
      while (received() < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const latencies = (from: number) => receipts.flatMap((r) => r.filter((x) => x.at >= from))
      .map((r) => r.at - createdAt.get(r.eventId)!).sort((a, b) => a - b);

    try {
      // Paced: events at a steady rate the platform keeps up with: latency without queueing.
      const pacedStart = Date.now();
      for (let i = 0; i < PACED_EVENTS; i++) {
        await emitOne();
        await new Promise((resolve) => setTimeout(resolve, 1000 / PACED_RATE));
      }
      await waitFor(PACED_EVENTS * ENDPOINTS);
      const paced = latencies(pacedStart);
      for (const r of receipts) r.length = 0;

      // Burst: 1,000 events as fast as 20 writers can record them.
      const started = Date.now();
      await Promise.all(Array.from({ length: WRITERS }, async () => {
        while (n < PACED_EVENTS + EVENTS) await emitOne();
      }));
      const written = Date.now();
      await waitFor(EVENTS * ENDPOINTS);
      const all = receipts.flat();
      const finished = Math.max(...all.map((r) => r.at));
      const burst = latencies(started);
      const uniquePerEndpoint = receipts.map((r) => new Set(r.map((x) => x.eventId)).size);
      // Where the time goes: outbox → dispatched (workflows started), and the attempt's own duration.
      const [dispatch] = await platform.sql<{ p50: number; p99: number }>(
        `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.99) within group (order by ms) as p99
           from (select extract(epoch from dispatched_at - created_at) * 1000 as ms from events
                  where type = 'payment.succeeded' and created_at >= $1) t`, [new Date(started)]);
      const [attempt] = await platform.sql<{ p50: number; p99: number }>(
        `select percentile_cont(0.5) within group (order by response_time_ms) as p50, percentile_cont(0.99) within group (order by response_time_ms) as p99
           from webhook_deliveries`);

      // Paced again, during an order burst.
      const orderBody = await openBenchShop(platform.url, key, { MIXED: 1_000_000 });
      for (const r of receipts) r.length = 0;
      const mixedStart = Date.now();
      const orderLoad = autocannonRun({
        url: `${platform.url}/v3/orders`, method: 'POST', headers, connections: ORDER_CLIENTS, duration: PACED_EVENTS / PACED_RATE, body: orderBody('MIXED'),
      });
      for (let i = 0; i < PACED_EVENTS; i++) {
        await emitOne();
        await new Promise((resolve) => setTimeout(resolve, 1000 / PACED_RATE));
      }
      const orders = await orderLoad;
      await waitFor(PACED_EVENTS * ENDPOINTS);
      const mixed = latencies(mixedStart);
      return {
        events: EVENTS,
        endpoints: ENDPOINTS,
        deliveries_expected: EVENTS * ENDPOINTS,
        deliveries_received: all.length,
        distinct_per_endpoint: uniquePerEndpoint.join(' / '),
        duplicates: all.length - uniquePerEndpoint.reduce((a, b) => a + b, 0),
        signature_failures: all.filter((r) => !r.ok).length,
        events_written_per_sec: Math.round(EVENTS / ((written - started) / 1000)),
        deliveries_per_sec: Math.round(all.length / ((finished - started) / 1000)),
        total_seconds: Math.round((finished - started) / 100) / 10,
        latency_p50_ms: percentile(burst, 50),
        latency_p99_ms: percentile(burst, 99),
        latency_max_ms: burst.at(-1),
        dispatch_p50_ms: Math.round(dispatch!.p50),
        dispatch_p99_ms: Math.round(dispatch!.p99),
        http_attempt_p50_ms: Math.round(attempt!.p50 * 10) / 10,
        http_attempt_p99_ms: Math.round(attempt!.p99 * 10) / 10,
        paced_events: `${PACED_EVENTS} at ${PACED_RATE}/s`,
        paced_deliveries_received: paced.length,
        paced_latency_p50_ms: percentile(paced, 50),
        paced_latency_p99_ms: percentile(paced, 99),
        paced_during_orders_deliveries_received: mixed.length,
        paced_during_orders_latency_p50_ms: percentile(mixed, 50),
        paced_during_orders_latency_p99_ms: percentile(mixed, 99),
        orders_beside_per_sec: orders.requestsPerSec,
        orders_beside_non2xx: orders.non2xx + orders.errors,
      };
    } finally {
      for (const r of receivers) await r.close();
    }
  },
};
