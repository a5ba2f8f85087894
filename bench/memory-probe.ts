/**
 * `scripts/node24.sh node bench/memory-probe.ts ['{"ENV":"value"}']`: the resident memory of the
 * API + worker process (bench/serve.ts, with the given extra environment): idle (5 s after start,
 * and after the release of what starting up left), after 15 s of POST /v3/orders on 50 SKUs, after
 * 10 s of GET /v3/customers/{id} (50 connections each), and after it handed the burst's memory back
 * once quiet (its order workflows keep it busy for a minute or more after the orders). The release
 * waits `MEMORY_RELEASE_IDLE_MS` of quiet: 5 s here unless given; 0 leaves both releases out. One
 * JSON line (MB, and the process's thread count). How docs/benchmarks.md measured each memory lever
 * (target 5); `BENCH_MEMORY_LOG=3000` in the environment adds the heap split on stderr.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openBenchShop } from './commerce.ts';
import { TICKS_PER_SECOND, cpuTicksOf } from './cpu.ts';
import { autocannonRun, startBenchPlatform, startInfra } from './harness.ts';

const env = { MEMORY_RELEASE_IDLE_MS: '5000', ...JSON.parse(process.argv[2] ?? '{}') as Record<string, string> };
const quietMs = Number(env.MEMORY_RELEASE_IDLE_MS);
const infra = await startInfra();
try {
  const platform = await startBenchPlatform(infra, { env });
  try {
    const memory = () => {
      const status = readFileSync(`/proc/${platform.pid}/status`, 'utf8');
      const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024);
      return { rss: mb('VmRSS'), peak: mb('VmHWM'), threads: Number(/Threads:\s+(\d+)/.exec(status)![1]) };
    };
    await sleep(5000);
    if (quietMs > 0) await released(platform.url, 0, Date.now() + 60_000);
    const idle = memory();
    const key = await platform.newKey();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const skus = Array.from({ length: 50 }, (_, i) => `PROBE-${i}`);
    const body = await openBenchShop(platform.url, key, Object.fromEntries(skus.map((sku) => [sku, 1_000_000])));
    const orders = await autocannonRun({
      url: `${platform.url}/v3/orders`, method: 'POST', headers, duration: 15,
      requests: [{ method: 'POST', setupRequest: (req: any) => ({ ...req, body: body(skus[Math.floor(Math.random() * skus.length)]!) }) }],
    });
    const afterOrders = memory();
    const customer = await (await fetch(`${platform.url}/v3/customers`, { method: 'POST', headers, body: JSON.stringify({ email: 'probe@example.com', name: 'Probe' }) })).json() as { id: string };
    const reads = await autocannonRun({ url: `${platform.url}/v3/customers/${customer.id}`, headers, duration: 10 });
    await sleep(3000);
    const end = memory();
    // A process that is quiet and has handed its burst back by itself (within the release's 64 MB
    // of its idle size: glibc returning freed memory) has no release due, so none is waited for.
    let cpuBefore = cpuTicksOf(platform.pid);
    const settledBack = () => {
      const cpu = cpuTicksOf(platform.pid);
      const quiet = cpu - cpuBefore < 0.05 * 2 * TICKS_PER_SECOND; // under 5 % of a core over the 2 s between polls
      cpuBefore = cpu;
      return quiet && memory().rss - idle.rss < 64;
    };
    const quiet = quietMs > 0 ? await released(platform.url, await releases(platform.url), Date.now() + 300_000, settledBack) : null;
    console.log(JSON.stringify({
      env, idle, orders_per_sec: orders.requestsPerSec, orders_non2xx: orders.non2xx + orders.errors, after_orders: afterOrders,
      reads_per_sec: reads.requestsPerSec, end, ...(quiet ? { [quiet.by === 'release' ? 'released_after_s' : 'back_by_itself_after_s']: quiet.seconds, after_release: memory() } : {}),
    }));
  } finally {
    await platform.close();
  }
} finally {
  await infra.stop();
}

/** The memory releases the server has made (`bp_memory_releases_total` on /metrics; the first comes in the quiet after its start). */
async function releases(url: string): Promise<number> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  return Number(/^bp_memory_releases_total (\d+)/m.exec(metrics)?.[1] ?? 0);
}

/** Waits for a release after the `before`th, or until `settled` says none is due; seconds waited, or null at the deadline. */
async function released(url: string, before: number, deadline: number, settled = () => false): Promise<{ seconds: number; by: 'release' | 'itself' } | null> {
  const started = Date.now();
  while (Date.now() < deadline) {
    const seconds = Math.round((Date.now() - started) / 1000);
    if (await releases(url) > before) return { seconds, by: 'release' };
    if (settled()) return { seconds, by: 'itself' };
    await sleep(2000);
  }
  return null;
}
