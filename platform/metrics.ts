/**
 * Prometheus metrics of this process (`prom-client`), served at `/metrics` by the API
 * (api/app.ts) and on METRICS_PORT by a worker-only process (worker/main.ts). One registry per
 * process: the API and the workers of `npm start` share it. Labels are low-cardinality by
 * construction (route templates, never paths; outcomes from a closed set).
 */
import type { Pool } from 'pg';
import type { Worker as NodeWorker } from 'node:worker_threads';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'bp_' });

const registers = [metricsRegistry];

/** Seconds; from 1 ms to 30 s, the range of an API answer (a payment waits up to 25 s). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequests = new Counter({
  name: 'bp_http_requests_total', help: 'HTTP requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const, registers,
});

export const httpDuration = new Histogram({
  name: 'bp_http_request_duration_seconds', help: 'Time from the request to its answer, by method, route template and status class.',
  labelNames: ['method', 'route', 'status_class'] as const, buckets: LATENCY_BUCKETS, registers,
});

/** Admission decisions: `admitted`, `rate_limited` (minute or day), `concurrency_limited`, `unauthenticated`. */
export const admissions = new Counter({
  name: 'bp_admission_decisions_total', help: 'API key admission decisions (rate and concurrency limits).',
  labelNames: ['outcome'] as const, registers,
});

/** What an Idempotency-Key did: `claimed` (first run), `replayed`, `in_use` (409), `reused` (422). */
export const idempotencyOutcomes = new Counter({
  name: 'bp_idempotency_outcomes_total', help: 'Requests carrying an Idempotency-Key, by outcome.',
  labelNames: ['outcome'] as const, registers,
});

export const webhookAttempts = new Counter({
  name: 'bp_webhook_delivery_attempts_total', help: 'Webhook delivery attempts, by outcome (delivered, failed).',
  labelNames: ['outcome'] as const, registers,
});

export const webhookLag = new Histogram({
  name: 'bp_webhook_delivery_lag_seconds', help: 'From an event\'s creation to its successful delivery to an endpoint.',
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600, 21_600, 86_400], registers,
});

export const workflowStarts = new Counter({
  name: 'bp_workflow_starts_total', help: 'Workflow starts requested by this process (start, signal-with-start, update-with-start), by type.',
  labelNames: ['workflow_type'] as const, registers,
});

/**
 * Events a dispatcher pass held and lost before it was done with them: the pass outlived its lease
 * (5 s, or WEBHOOK_HEARTBEAT_TIMEOUT_MS when longer) and another pass took them. Harmless (the
 * other pass starts the same workflow ids and sends the same webhook-ids), but a steady rate says
 * passes take longer than their lease: the dispatcher is overloaded.
 */
export const eventClaimsLost = new Counter({
  name: 'bp_event_claims_lost_total', help: 'Events a dispatcher pass lost to another pass because it outlived its lease.',
  registers,
});

/** Memory-reducing collections run once the process was quiet (platform/memory-release.ts). */
export const memoryReleases = new Counter({
  name: 'bp_memory_releases_total', help: 'Memory-reducing garbage collections run after a quiet spell, handing pooled heap pages back.',
  registers,
});

const pools = new Map<string, Pool>();

/** Connections of every pool this process registered (`observePool`): total, idle and waiting clients. */
new Gauge({
  name: 'bp_db_pool_connections', help: 'PostgreSQL pool: open connections (total), idle ones, and clients waiting for one.',
  labelNames: ['pool', 'state'] as const, registers,
  collect() {
    this.reset();
    for (const [name, pool] of pools) {
      this.set({ pool: name, state: 'total' }, pool.totalCount);
      this.set({ pool: name, state: 'idle' }, pool.idleCount);
      this.set({ pool: name, state: 'waiting' }, pool.waitingCount);
    }
  },
});

/** Reports `pool`'s usage under `name` (`bp_db_pool_connections`). */
export function observePool(name: string, pool: Pool): void {
  pools.set(name, pool);
}

const workflowThreads = new Set<NodeWorker>();

/** The V8 heap of each workflow thread (the main thread's is in `bp_nodejs_heap_size_*`). */
new Gauge({
  name: 'bp_workflow_thread_heap_bytes', help: 'V8 heap of each Temporal workflow thread: used, total (committed) and limit.',
  labelNames: ['thread', 'state'] as const, registers,
  async collect() {
    this.reset();
    for (const heap of await workflowThreadHeaps()) {
      this.set({ thread: heap.thread, state: 'used' }, heap.used);
      this.set({ thread: heap.thread, state: 'total' }, heap.total);
      this.set({ thread: heap.thread, state: 'limit' }, heap.limit);
    }
  },
});

/** Reports the heaps of `threads` (`bp_workflow_thread_heap_bytes`) until the returned function is called. */
export function observeWorkflowThreads(threads: NodeWorker[]): () => void {
  for (const thread of threads) workflowThreads.add(thread);
  return () => { for (const thread of threads) workflowThreads.delete(thread); };
}

/** The heap of each workflow thread now, in bytes (a thread that exited meanwhile is left out). */
export async function workflowThreadHeaps(): Promise<{ thread: string; used: number; total: number; limit: number }[]> {
  const heaps = await Promise.all([...workflowThreads].map(async (thread) => {
    const heap = await thread.getHeapStatistics().catch(() => null);
    return heap && { thread: String(thread.threadId), used: heap.used_heap_size, total: heap.total_heap_size, limit: heap.heap_size_limit };
  }));
  return heaps.filter((h) => h !== null);
}

export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}
