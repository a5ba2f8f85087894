/**
 * `scripts/node24.sh node bench/gc-probe.ts [foundation|payments] ['{"ENV":"value"}']`: what garbage
 * collection costs per request. The servers run with V8's `--trace-gc-nvp`. `foundation` (the
 * default): GET /v3/customers/{id} through the pipeline and the raw baseline, each at 50 connections;
 * `payments`: POST /v3/payments/process (each a new payment, with its workflow) at 10. Each side is
 * loaded for 8 s (after 3 s unmeasured), and from the collections of that window (of all the
 * server's isolates: its main thread and its workflow threads) the probe prints, per request: the
 * bytes allocated, the bytes the scavenges promoted to the old generation (objects that outlived
 * two scavenges, or that something old still pointed to) and the microseconds of GC pause; plus the
 * number of scavenges and full collections. Promotion is what makes a young generation expensive:
 * a scavenge's cost is what it copies, and what it promotes is only freed by full collections
 * (docs/benchmarks.md, "Garbage collection and the request log").
 */
import { foundationSides } from './foundation.ts';
import { autocannonRun, paymentsLoad, readServerOutput, startBenchPlatform, startInfra } from './harness.ts';

interface Collection { pid: number; kind: string; pauseMs: number; allocated: number; promoted: number }

/** The `--trace-gc-nvp` lines of the servers' stdout (`[pid:isolate:…] N ms: pause=… gc=s …`). */
const collections: Collection[] = [];
const partial = new Map<number, string>();
readServerOutput((chunk, from) => {
  const lines = ((partial.get(from) ?? '') + chunk.toString('utf8')).split('\n');
  partial.set(from, lines.pop()!);
  for (const line of lines) {
    const pid = /^\[(\d+):/.exec(line)?.[1];
    if (!pid || !line.includes(' gc=')) continue;
    const field = (name: string) => new RegExp(` ${name}=(\\S+)`).exec(line)?.[1];
    collections.push({
      pid: Number(pid), kind: field('gc')!, pauseMs: Number(field('pause') ?? 0),
      allocated: Number(field('allocated') ?? 0), promoted: Number(field('promoted') ?? 0),
    });
  }
});

process.env.BENCH_NODE_FLAGS = `${process.env.BENCH_NODE_FLAGS ?? ''} --trace-gc-nvp`;
const scenario = process.argv[2]?.startsWith('{') ? 'foundation' : process.argv[2] ?? 'foundation';
const env = JSON.parse(process.argv.find((a) => a.startsWith('{')) ?? '{}') as Record<string, string>;
const infra = await startInfra();
const platform = await startBenchPlatform(infra, { env });
try {
  const sides = scenario === 'payments' ? null : await foundationSides(platform);
  try {
    const loads = sides
      ? { baseline: { ...sides.baseline, connections: 50 }, pipeline: { ...sides.pipeline, connections: 50 } }
      : { payments: { ...(await paymentsLoad(platform, 10)), pid: platform.pid } };
    for (const [name, side] of Object.entries(loads)) {
      await autocannonRun({ ...side, duration: 3 });
      const from = collections.length;
      const result = await autocannonRun({ ...side, duration: 8 });
      const window = collections.slice(from).filter((c) => c.pid === side.pid);
      const scavenges = window.filter((c) => c.kind === 's');
      const per = (bytes: number) => Math.round(bytes / result.total);
      console.log(JSON.stringify({
        run: name, rps: result.requestsPerSec, requests: result.total,
        scavenges: scavenges.length, full_collections: window.length - scavenges.length,
        per_request: {
          allocated_bytes: per(scavenges.reduce((n, c) => n + c.allocated, 0)),
          promoted_bytes: per(scavenges.reduce((n, c) => n + c.promoted, 0)),
          gc_pause_us: Math.round((window.reduce((n, c) => n + c.pauseMs, 0) * 1000) / result.total * 10) / 10,
        },
      }));
    }
  } finally {
    await sides?.stop();
  }
} finally {
  await platform.close();
  await infra.stop();
}

