import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import WebSocket from 'ws';
import { percentile, type BenchPlatform, type Scenario } from './harness.ts';

const CLIENTS = 1000;
const CHANGES_PER_SEC = 100;
const DURATION_S = 10;
const SKUS = 10;

async function post(platform: BenchPlatform, key: string, path: string, body: unknown, method = 'POST'): Promise<any> {
  const res = await fetch(`${platform.url}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Resident memory of a process, in MiB (Linux). */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
}

async function spawnJsonLine(script: string, env: Record<string, string>): Promise<{ child: ChildProcess; info: Record<string, any> }> {
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const info = await new Promise<Record<string, any>>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const line = buf.split('\n').find((l) => l.startsWith('{') && l.includes('url'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  child.stdout!.resume();
  return { child, info };
}

/** Connects `n` clients (in batches); each records the latency of every stock change it receives. */
async function connectClients(url: string, headers: Record<string, string>, n: number, subscribe: boolean) {
  const latencies: number[] = [];
  const sockets: WebSocket[] = [];
  for (let start = 0; start < n; start += 100) {
    await Promise.all(Array.from({ length: Math.min(100, n - start) }, () => new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.on('message', (data) => {
        // The client side is cheap on purpose (no JSON.parse per message): the server is what is measured.
        const text = data.toString();
        const ref = /"reference":"(\d+)"/.exec(text);
        if (ref) latencies.push(Date.now() - Number(ref[1]));
        if (text.includes('"type":"subscribed"') || (!subscribe && ref)) resolve();
      });
      ws.once('open', () => {
        if (subscribe) ws.send(JSON.stringify({ type: 'subscribe' }));
        else resolve();
      });
      ws.once('error', reject);
      sockets.push(ws);
    })));
  }
  return { latencies, sockets };
}

/** Samples a process's memory every 250 ms while `work` runs; the peak. */
async function peakRss(pid: number, work: () => Promise<void>): Promise<number> {
  let peak = rssMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 250);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssMb(pid));
}

const stats = (l: number[]) => {
  const sorted = [...l].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
};

/**
 * Realtime inventory fan-out: 1,000 WebSocket clients on one API process (a replica of its own, so
 * its memory is measured alone), 100 stock changes a second for 10 s committed in PostgreSQL (the
 * ledger trigger NOTIFYs them; the replica LISTENs and sends each to every subscribed socket).
 * Delivery latency runs from just before the change is sent to the database to the client's
 * receipt. The baseline is a bare `ws` broadcast server (no database, no auth) in the same run.
 */
export const scenario: Scenario = {
  name: 'warehouses: inventory WebSocket fan-out, 1,000 clients, 100 changes/s',
  async run(platform) {
    const key = await platform.newKey();
    const store = await post(platform, key, '/v3/stores', { name: 'Bench shop', default_currency: 'USD' });
    const warehouse = await post(platform, key, '/v3/warehouses', { name: 'Bench warehouse' });
    const skus = Array.from({ length: SKUS }, (_, i) => `WS-${i}`);
    for (const sku of skus) await post(platform, key, `/v3/stores/${store.id}/products`, { name: sku, sku, price: 100 });
    await post(platform, key, '/v3/inventory/bulk-update', { items: skus.map((sku) => ({ sku, warehouse_id: warehouse.id, quantity: 1000, operation: 'set' })) });

    const total = CHANGES_PER_SEC * DURATION_S;
    const interval = 1000 / CHANGES_PER_SEC;

    // Ours: a replica holding the sockets.
    const replica = await spawnJsonLine(fileURLToPath(new URL('../test/support/api-process.ts', import.meta.url)), {
      DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: platform.temporalAddress, TASK_QUEUE_PREFIX: platform.taskQueuePrefix,
      LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '100000000', RATE_LIMIT_PER_MINUTE_PREMIUM: '100000000', RATE_LIMIT_PER_DAY: '100000000', RATE_LIMIT_CONCURRENCY: '100000',
    });
    const pid = Number(replica.info.pid);
    // Writers on four connections, so a slow commit does not hold back the schedule.
    const writers = await Promise.all(Array.from({ length: 4 }, async () => {
      const c = new pg.Client({ connectionString: platform.dbUrl });
      await c.connect();
      return c;
    }));
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const idle = rssMb(pid);
      const ours = await connectClients(`${replica.info.url.replace(/^http/, 'ws')}/v3/inventory/realtime`, { authorization: `Bearer ${key}` }, CLIENTS, true);
      const connected = rssMb(pid);
      const t0 = Date.now();
      let achieved = 0;
      const peak = await peakRss(pid, async () => {
        const sent: Promise<unknown>[] = [];
        for (let i = 0; i < total; i++) {
          const wait = t0 + i * interval - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          // Stamped with the time the change was due: a writer that falls behind its schedule shows in the latency.
          sent.push(writers[i % writers.length]!.query(`begin; select set_config('bp.stock_reference', '${t0 + i * interval}', true);
            update inventory_levels set quantity = quantity + 1 where warehouse_id = '${warehouse.id}' and sku = '${skus[i % SKUS]}'; commit;`));
        }
        await Promise.all(sent);
        achieved = total / ((Date.now() - t0) / 1000);
        const deadline = Date.now() + 30_000;
        while (ours.latencies.length < total * CLIENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      });
      for (const s of ours.sockets) s.terminate();
      const o = stats(ours.latencies);

      // Baseline: a bare ws broadcast.
      const base = await spawnJsonLine(fileURLToPath(new URL('./warehouses-baseline.ts', import.meta.url)), {});
      const basePid = Number(base.info.pid);
      const baseIdle = rssMb(basePid);
      const bare = await connectClients(base.info.url, {}, CLIENTS, false);
      const baseConnected = rssMb(basePid);
      const basePeak = await peakRss(basePid, async () => {
        base.child.stdin!.write(`go ${total} ${interval}\n`);
        const deadline = Date.now() + DURATION_S * 1000 + 30_000;
        while (bare.latencies.length < total * CLIENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      });
      for (const s of bare.sockets) s.terminate();
      base.child.kill('SIGKILL');
      const b = stats(bare.latencies);

      return {
        clients: CLIENTS,
        changes_per_sec_target: CHANGES_PER_SEC,
        changes_per_sec_sent: Math.round(achieved * 10) / 10,
        delivered: ours.latencies.length,
        expected: total * CLIENTS,
        delivery_p50_ms: o.p50,
        delivery_p99_ms: o.p99,
        delivery_max_ms: o.max,
        server_rss_idle_mb: idle,
        server_rss_connected_mb: connected,
        server_rss_peak_mb: peak,
        baseline_delivered: bare.latencies.length,
        baseline_p50_ms: b.p50,
        baseline_p99_ms: b.p99,
        baseline_rss_idle_mb: baseIdle,
        baseline_rss_connected_mb: baseConnected,
        baseline_rss_peak_mb: basePeak,
        p99_ratio_vs_baseline: b.p99 > 0 ? Math.round((o.p99 / b.p99) * 10) / 10 : null,
      };
    } finally {
      for (const w of writers) await w.end();
      replica.child.kill('SIGKILL');
    }
  },
};
