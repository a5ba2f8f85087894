// First: tracing must be started before `pg` is loaded.
import { spanExporter } from './support/tracing.ts';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { trace } from '@opentelemetry/api';
import { Client } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../platform/executables.ts';
import { metricsRegistry } from '../../platform/metrics.ts';
import { usePlatform } from '../support/use-platform.ts';
import { cardBody, waitForPayment } from '../payments/support.ts';
import { dashboardQueries, exposition, promqlNames } from './support/dashboard.ts';
import { eventually, startReceiver } from '../webhooks/support/receiver.ts';

const lines: string[] = [];
const sink = { write: (line: string) => lines.push(line) };
const tracer = trace.getTracer('observability-test');
/** The Temporal SDK's own Prometheus endpoint (its runtime's telemetry options), on a free port. */
const sdkMetricsPort = await new Promise<number>((ok) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as AddressInfo;
    probe.close(() => ok(port));
  });
});
const t = usePlatform({ worker: true, log: { out: sink, err: sink }, env: {
    LOG_LEVEL: 'info', TEMPORAL_METRICS_BIND_ADDRESS: `127.0.0.1:${sdkMetricsPort}`,
    // Webhooks to a receiver on loopback, retried at once.
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', EVENT_DISPATCH_SWEEP_MS: '500',
  },
});

/** The value of a sample line `name{labels} value` in a Prometheus text page, or 0 when absent. */
function sample(page: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = page.split('\n').find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && wanted.every((w) => l.includes(w)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function metricsPage(): Promise<string> {
  const res = await fetch(`${t.platform.api.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

describe('GET /metrics', () => {
  it('counts requests by route template and status, admissions, idempotency outcomes and workflow starts', async () => {
    const before = await metricsPage();
    const customer = await t.http('/v3/customers', { key: t.key, body: { email: 'metrics@example.com', name: 'Metrics' } });
    expect(customer.status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await t.http(`/v3/customers/${customer.body.id}`, { key: t.key })).status).toBe(200);
    expect((await t.http('/v3/customers/cus_doesnotexist', { key: t.key })).status).toBe(404);
    const headers = { 'idempotency-key': 'metrics-payment-1' };
    const body = { amount: 1500, currency: 'USD', payment_method: cardBody('4242424242424242') };
    expect((await t.http('/v3/payments/process', { key: t.key, headers, body })).status).toBe(201);
    expect((await t.http('/v3/payments/process', { key: t.key, headers, body })).headers.get('idempotent-replayed')).toBe('true');
    expect((await t.http('/v3/customers', { key: 'bp_test_' + 'x'.repeat(40) })).status).toBe(401);

    const after = await metricsPage();
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    const route = '/v3/customers/{customer_id}';
    expect(delta('bp_http_requests_total', { method: 'GET', route, status: '200' })).toBe(3);
    expect(delta('bp_http_requests_total', { method: 'GET', route, status: '404' })).toBe(1);
    expect(delta('bp_http_request_duration_seconds_count', { method: 'GET', route, status_class: '2xx' })).toBe(3);
    expect(after).not.toContain('cus_doesnotexist'); // templates, never paths
    expect(delta('bp_admission_decisions_total', { outcome: 'unauthenticated' })).toBe(1);
    expect(delta('bp_admission_decisions_total', { outcome: 'admitted' })).toBeGreaterThanOrEqual(7);
    expect(delta('bp_idempotency_outcomes_total', { outcome: 'claimed' })).toBe(1);
    expect(delta('bp_idempotency_outcomes_total', { outcome: 'replayed' })).toBe(1);
    expect(delta('bp_workflow_starts_total', { workflow_type: 'paymentWorkflow' })).toBe(1);
    expect(sample(after, 'bp_db_pool_connections', { pool: 'orm', state: 'total' })).toBeGreaterThan(0);
    expect(after).toContain('bp_process_resident_memory_bytes');
    const threadHeap = (state: string) => sample(after, 'bp_workflow_thread_heap_bytes', { state });
    expect(threadHeap('used')).toBeGreaterThan(0); // the workflow thread's own heap, not the main thread's
    expect(threadHeap('total')).toBeGreaterThanOrEqual(threadHeap('used'));
    expect(threadHeap('limit')).toBeGreaterThan(threadHeap('total'));
  });

  it('measures webhook deliveries: attempts by outcome, and the lag from an event to its delivery', async () => {
    const receiver = await startReceiver();
    let endpointId: string | undefined;
    try {
      // The first attempt fails, its retry is delivered.
      receiver.reply = () => (receiver.received.length === 1 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' });
      // Earlier tests' events go out first: only this test's payment may reach the endpoint.
      await eventually(async () => (await t.platform.sql('select 1 from events where dispatched_at is null limit 1')).length === 0);
      const endpoint = await t.http('/v3/webhooks', { key: t.key, body: { url: receiver.url, events: ['payment.succeeded'] } });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
      endpointId = endpoint.body.id;
      const before = await metricsPage();
      const startedAt = Date.now();
      const payment = await t.http('/v3/payments/process', { key: t.key, body: { amount: 900, currency: 'USD', payment_method: cardBody('4242424242424242') } });
      expect(payment.status).toBe(201);
      await receiver.waitFor(2);
      const delta = (page: string, name: string, labels?: Record<string, string>) => sample(page, name, labels) - sample(before, name, labels);
      // The delivered attempt is counted once it is recorded, just after the receiver answered.
      const after = await eventually(async () => {
        const page = await metricsPage();
        return delta(page, 'bp_webhook_delivery_attempts_total', { outcome: 'delivered' }) >= 1 && page;
      });
      const elapsedS = (Date.now() - startedAt) / 1000;
      expect(delta(after, 'bp_webhook_delivery_attempts_total', { outcome: 'failed' })).toBe(1);
      expect(delta(after, 'bp_webhook_delivery_attempts_total', { outcome: 'delivered' })).toBe(1);
      expect(delta(after, 'bp_webhook_delivery_lag_seconds_count')).toBe(1);
      // From the event's creation to the retry's success: after the first attempt, within the test's time.
      const lag = delta(after, 'bp_webhook_delivery_lag_seconds_sum');
      expect(lag).toBeGreaterThan(0.1);
      expect(lag).toBeLessThanOrEqual(elapsedS);
    } finally {
      if (endpointId) expect((await t.http(`/v3/webhooks/${endpointId}`, { key: t.key, method: 'DELETE' })).status).toBe(200);
      await receiver.close();
    }
  });

  it('answers only the same host, or the bearer of METRICS_TOKEN', async () => {
    const api = await t.platform.startSecondApi();
    try {
      // The second API's config is its own copy only if it was built so; restore it either way.
      api.deps.config.METRICS_TOKEN = 'scrape-token-0123456789';
      expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${api.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(404);
      const ok = await fetch(`${api.url}/metrics`, { headers: { authorization: 'Bearer scrape-token-0123456789' } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('bp_http_requests_total');
    } finally {
      api.deps.config.METRICS_TOKEN = undefined;
      await api.close();
    }
  });
});

/** Labels Prometheus adds to every series it scrapes (the dashboard groups by them). */
const TARGET_LABELS = new Set(['job', 'instance']);
const DASHBOARD = join(PROJECT_ROOT, 'deploy/observability/grafana/dashboards/business-platform.json');

describe('the Grafana dashboard (deploy/observability)', () => {
  it('queries only metrics and labels that the API and worker process and the Temporal SDK export', async () => {
    const payment = await t.http('/v3/payments/process', { key: t.key, body: { amount: 1200, currency: 'USD', payment_method: cardBody('4242424242424242') } });
    expect(payment.status).toBe(201);
    await waitForPayment(t.http, t.key, payment.body.id, (p) => p.status === 'succeeded');
    const sdkPage = await (await fetch(`http://127.0.0.1:${sdkMetricsPort}/metrics`)).text();
    const sdk = exposition(sdkPage);
    const exported = new Map([...exposition(await metricsPage()), ...sdk]);
    // A metric of ours that nothing has observed yet has no samples: its name and labels come from its definition.
    for (const metric of metricsRegistry.getMetricsAsArray()) {
      const { name, type, labelNames = [] } = metric as typeof metric & { labelNames?: string[] };
      const names = String(type) === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
      for (const n of names) exported.set(n, new Set([...(exported.get(n) ?? []), ...labelNames, ...(n.endsWith('_bucket') ? ['le'] : [])]));
    }

    const queries = dashboardQueries(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
    const problems: string[] = [];
    for (const q of queries) {
      const { metrics, labels } = promqlNames(q.expr);
      if (!metrics.length) problems.push(`${q.panel}: no metric in ${q.expr}`);
      for (const m of metrics) {
        if (!exported.has(m)) problems.push(`${q.panel}: ${m} is not exported`);
        else for (const l of labels) if (!TARGET_LABELS.has(l) && !exported.get(m)!.has(l)) problems.push(`${q.panel}: ${m} has no label ${l}`);
      }
    }
    expect(problems).toEqual([]);
    // The SDK's own metrics are on it, with the finer schedule-to-start buckets (worker/worker.ts).
    expect(queries.filter((q) => promqlNames(q.expr).metrics.some((m) => sdk.has(m))).length).toBeGreaterThanOrEqual(4);
    expect(sdkPage).toMatch(/temporal_workflow_task_schedule_to_start_latency_bucket\{[^}]*le="25"\}/);
  });

  it('would catch a panel on a metric nobody exports', () => {
    expect(promqlNames('histogram_quantile(0.99, sum by (le, route) (rate(bp_http_request_duration_seconds_bucket{status_class="5xx"}[5m])))'))
      .toEqual({ metrics: ['bp_http_request_duration_seconds_bucket'], labels: ['le', 'route', 'status_class'] });
    expect(promqlNames('sum(rate(bp_no_such_total[1m])) / on (job) group_left sum(up)').metrics).toEqual(['bp_no_such_total', 'up']);
  });
});

/** A payment made through the API, traced from a clean exporter; its request's server span once it has succeeded. */
async function tracedPayment(card: string, amount: number) {
  spanExporter.reset();
  const res = await t.http('/v3/payments/process', { key: t.key, body: { amount, currency: 'USD', payment_method: cardBody(card) } });
  expect(res.status).toBeLessThan(300);
  await waitForPayment(t.http, t.key, res.body.id, (p) => p.status === 'succeeded');
  return { res, server: await waitForSpan((s) => s.name === 'POST /v3/payments/process') };
}

describe('tracing', () => {
  it('one request is one connected trace: HTTP, the Temporal client, the workflow, its activities and their SQL', async () => {
    const { res, server } = await tracedPayment('4242424242424242', 2500);
    expect(res.status).toBe(201);
    const traceId = server.spanContext().traceId;
    await waitForSpan((s) => s.name === 'RunActivity:chargePayment' && s.spanContext().traceId === traceId);
    await waitForSpan((s) => s.name.startsWith('RunWorkflow:paymentWorkflow') && s.spanContext().traceId === traceId);

    const spans = spanExporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    // Every span of the trace leads up to the request's server span.
    for (const span of spans) {
      let at: ReadableSpan | undefined = span;
      for (let hops = 0; at && at !== server && hops < 50; hops++) at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined;
      expect(at, `${span.name} is not connected to the request`).toBe(server);
    }
    const names = spans.map((s) => s.name);
    expect(names).toContain('UpdateWithStartWorkflow:awaitPaymentOutcome');
    expect(names).toContain('RunActivity:recordPayment');
    expect(names.some((n) => n.startsWith('pg.query'))).toBe(true);
    expect(server.attributes['http.route']).toBe('/v3/payments/process');
    expect(server.attributes['http.response.status_code']).toBe(201);

    // The access log line of that request carries the trace id beside the request id.
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.request_id === res.headers.get('request-id'));
    expect(logged?.trace_id).toBe(traceId);
  });

  it('writes the lines of workflow code and of the Temporal SDK as the platform\'s JSON lines, with the workflow\'s ids and the request\'s trace id', async () => {
    // The sandbox's processing_error_once card: the charge's local attempt fails, and the workflow says so in its log.
    const { res, server } = await tracedPayment('4000000000000119', 2600);
    const workflowId = `payment-${res.body.id}`;
    const parsed = () => lines.flatMap((l) => { try { return [JSON.parse(l) as Record<string, unknown>]; } catch { return []; } });
    const workflowLine = await eventually(async () => parsed().find((l) => l.workflow_id === workflowId && l.sdk_component === 'workflow'));
    expect(workflowLine).toMatchObject({ level: 'info', workflow_type: 'paymentWorkflow', trace_id: server.spanContext().traceId });
    expect(workflowLine.msg).toContain('local charge attempt left the charge undecided');
    expect(workflowLine.task_queue).toEqual(expect.any(String));
    // Nothing of the SDK's own text format (`[WARN] Activity failed {…}`) among the lines.
    expect(lines.filter((l) => !l.trimStart().startsWith('{'))).toEqual([]);
  });

  it('makes no workflow spans for a workflow started without a trace context', async () => {
    spanExporter.reset();
    const refund = (id: string) => ({
      workflowId: `refund-${id}`, taskQueue: t.platform.temporal.taskQueue('payments'),
      args: [{ refundId: id, paymentId: 'pay_none', accountId: t.platform.accountId, livemode: false, amount: null, reason: null, metadata: {}, requestId: null, requestIdempotencyKey: null }],
    });
    // The platform's client sends the active trace context; a bare client (a schedule, a tool) sends none.
    const bare = new Client({ connection: t.platform.temporal.client.connection, namespace: t.platform.config.TEMPORAL_NAMESPACE });
    let traceId = '';
    const traced = tracer.startActiveSpan('test: traced start', (span) => {
      traceId = span.spanContext().traceId;
      return t.platform.temporal.client.workflow.execute('refundWorkflow', refund('re_traced_start')).finally(() => span.end());
    });
    const [untracedOutcome, tracedOutcome] = await Promise.all([bare.workflow.execute('refundWorkflow', refund('re_untraced_start')), traced]);
    for (const outcome of [untracedOutcome, tracedOutcome]) expect(outcome).toMatchObject({ accepted: false, code: 'payment_not_found' });
    await waitForSpan((s) => s.name === 'RunWorkflow:refundWorkflow');
    // Both ran the same steps; only the traced one made workflow spans, all in its trace. (Their
    // activities make spans either way, the untraced one's in a trace of its own.)
    const workflowSpans = spanExporter.getFinishedSpans().filter((s) => /^(RunWorkflow:refundWorkflow|StartActivity:reserveRefund)$/.test(s.name));
    expect(workflowSpans.filter((s) => s.name === 'RunWorkflow:refundWorkflow')).toHaveLength(1);
    expect(new Set(workflowSpans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
  });

  it('continues the caller\'s trace from a traceparent header', async () => {
    spanExporter.reset();
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await t.http('/v3/customers', { key: t.key, headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` } });
    expect(res.status).toBe(200);
    const server = await waitForSpan((s) => s.name === 'GET /v3/customers');
    expect(server.spanContext().traceId).toBe(callerTrace);
    expect(server.parentSpanId).toBe('00f067aa0ba902b7');
  });
});

async function waitForSpan(match: (s: ReadableSpan) => boolean, timeoutMs = 20_000): Promise<ReadableSpan> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = spanExporter.getFinishedSpans().find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such span; have: ${[...new Set(spanExporter.getFinishedSpans().map((s) => s.name))].join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
