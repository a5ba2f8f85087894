/**
 * `scripts/node24.sh node bench/memory-probe.ts ['{"ENV":"value"}']`: the resident memory of the
 * API + worker process (bench/serve.ts, with the given extra environment) idle 5 s after start, after
 * 15 s of POST /v3/orders on 50 SKUs and after 10 s of GET /v3/customers/{id}, 50 connections each:
 * one JSON line (MB, and the process's thread count). How docs/benchmarks.md measured each memory
 * lever (target 5); `BENCH_MEMORY_LOG=3000` in the environment adds the heap split on stderr.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openBenchShop } from './commerce.ts';
import { autocannonRun, startBenchPlatform, startInfra } from './harness.ts';

const env = JSON.parse(process.argv[2] ?? '{}') as Record<string, string>;
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
    console.log(JSON.stringify({
      env, idle, orders_per_sec: orders.requestsPerSec, orders_non2xx: orders.non2xx + orders.errors, after_orders: afterOrders,
      reads_per_sec: reads.requestsPerSec, end: memory(),
    }));
  } finally {
    await platform.close();
  }
} finally {
  await infra.stop();
}
