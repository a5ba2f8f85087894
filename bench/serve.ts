/** The platform (API + worker, no launcher infra) in its own process, for benchmarks. */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { startApiServer } from '../api/server.ts';
import { createOrm } from '../db/orm.ts';
import { loadConfigOrExit } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startMemoryRelease } from '../platform/memory-release.ts';
import { onShutdown } from '../platform/process.ts';
import { workflowThreadHeaps } from '../platform/metrics.ts';
import { createTemporalHandle } from '../platform/temporal.ts';
import { buildWorkflowBundle, startWorkers } from '../worker/worker.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL);
const orm = await createOrm({ url: config.DATABASE_URL!, poolMax: config.DATABASE_POOL_MAX });
const temporal = createTemporalHandle({ address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, taskQueueLayout: config.TEMPORAL_TASK_QUEUES });
// The workflow bundle, with the benchmark's empty workflow (the bare-Temporal baseline, never in
// production): prebuilt by the bench process (WORKFLOW_BUNDLE_PATH, see harness.ts), as production
// loads a prebuilt bundle, so the server's peak memory is not webpack's; else built here.
const bundle = config.WORKFLOW_BUNDLE_PATH
  ? { codePath: config.WORKFLOW_BUNDLE_PATH }
  : { code: (await buildWorkflowBundle([new URL('./baseline-workflow.ts', import.meta.url)])).code };
const workers = await startWorkers({
  address: config.TEMPORAL_ADDRESS!, namespace: config.TEMPORAL_NAMESPACE, taskQueuePrefix: config.TASK_QUEUE_PREFIX, orm, logger,
  bundle,
});
const api = await startApiServer({ config, orm, temporal, logger, port: 0, host: '127.0.0.1' });
console.log(JSON.stringify({ url: api.url }));
const stopMemoryRelease = startMemoryRelease({ idleMs: config.MEMORY_RELEASE_IDLE_MS, trimEveryMs: config.MALLOC_TRIM_INTERVAL_MS, logger });
// BENCH_MEMORY_LOG=<ms>: where the memory is, every <ms> on stderr (RSS, the main thread's V8 heap,
// off-heap buffers, the workflow threads' V8 heaps); what RSS holds beyond them is native: the Temporal
// core, code, malloc.
if (process.env.BENCH_MEMORY_LOG) {
  const mb = (n: number) => Math.round(n / 1048576);
  setInterval(() => void workflowThreadHeaps().then((threads) => {
    const m = process.memoryUsage();
    console.error(JSON.stringify({
      memory_mb: {
        rss: mb(m.rss), heap_total: mb(m.heapTotal), heap_used: mb(m.heapUsed), external: mb(m.external), array_buffers: mb(m.arrayBuffers),
        workflow_threads: threads.map((t) => ({ heap_total: mb(t.total), heap_used: mb(t.used) })),
      },
    }));
  }), Number(process.env.BENCH_MEMORY_LOG)).unref();
}
// BENCH_ALLOC_PROFILE=<file>: a sampling profile of every allocation (kept or collected since), written
// at shutdown: where the garbage the collector works through comes from (a .heapprofile for DevTools).
// With BENCH_ALLOC_PROFILE_SURVIVORS=1 only what outlived the young generation (kept, or collected by
// a full collection): what each scavenge copies and promotes, and what fills the old generation.
const allocations = process.env.BENCH_ALLOC_PROFILE ? await startAllocationSampling() : null;
const shutdown = onShutdown(logger, async () => {
  stopMemoryRelease();
  if (allocations) writeFileSync(process.env.BENCH_ALLOC_PROFILE!, JSON.stringify(await allocations.stop()));
  await api.close();
  await workers.shutdown();
  await temporal.close();
  await orm.close();
});
shutdown.exitWhenEnded(workers.done, 'workers stopped');

async function startAllocationSampling(): Promise<{ stop(): Promise<unknown> }> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 32_768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !process.env.BENCH_ALLOC_PROFILE_SURVIVORS,
  });
  return { stop: async () => (await session.post('HeapProfiler.stopSampling')).profile };
}
