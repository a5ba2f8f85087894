import { autocannonRun, median, spawnServer, stopServer, type BenchPlatform, type LoadResult, type Scenario } from './harness.ts';

const ROUNDS = 3;

/**
 * The two sides of the comparison: a customer read through the platform with a key, and the same
 * row through the raw baseline server (started here; `stop` ends it). Also used by bench/cpu-probe.ts.
 */
export async function foundationSides(platform: BenchPlatform) {
  const key = await platform.newKey();
  const created = await fetch(`${platform.url}/v3/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.com', first_name: 'Bench', last_name: 'Mark', segments: ['vip'] }),
  });
  const customer = (await created.json()) as { id: string };
  const [row] = await platform.sql<{ account_id: string }>('select account_id from customers where id = $1', [customer.id]);
  const { child, info } = await spawnServer('./baseline-server.ts', { DATABASE_URL: platform.dbUrl, BENCH_ACCOUNT_ID: row!.account_id });
  return {
    baseline: { pid: child.pid!, url: `${info.url}/v3/customers/${customer.id}` },
    pipeline: { pid: platform.pid, url: `${platform.url}/v3/customers/${customer.id}`, headers: { authorization: `Bearer ${key}` } },
    stop: () => stopServer(child),
  };
}

/**
 * GET /v3/customers/{id} through the full pipeline (auth, rate limits in PostgreSQL, request log,
 * scoping, serialisation) against a raw node:http + pg server running the same SELECT.
 */
export const scenario: Scenario = {
  name: 'foundation: GET /v3/customers/{id} vs raw node:http + pg',
  async run(platform) {
    const sides = await foundationSides(platform);
    try {
      const connections = 50;
      const baselineRun = { url: sides.baseline.url, connections };
      const pipelineRun = { url: sides.pipeline.url, connections, headers: sides.pipeline.headers };
      await autocannonRun({ ...baselineRun, duration: 3 }); // warm-up
      await autocannonRun({ ...pipelineRun, duration: 3 });
      // Alternating rounds, so a slower stretch of the machine weighs on both sides alike; medians reported.
      const rounds: { baseline: LoadResult; pipeline: LoadResult }[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        rounds.push({ baseline: await autocannonRun({ ...baselineRun, duration: 5 }), pipeline: await autocannonRun({ ...pipelineRun, duration: 5 }) });
      }
      return {
        connections,
        rounds: ROUNDS,
        baseline_rps: median(rounds.map((r) => r.baseline.requestsPerSec)),
        baseline_p99_ms: median(rounds.map((r) => r.baseline.p99)),
        pipeline_rps: median(rounds.map((r) => r.pipeline.requestsPerSec)),
        pipeline_p99_ms: median(rounds.map((r) => r.pipeline.p99)),
        pipeline_p50_ms: median(rounds.map((r) => r.pipeline.p50)),
        pipeline_non2xx: rounds.reduce((n, r) => n + r.pipeline.non2xx + r.pipeline.errors, 0),
        ratio: Math.round(median(rounds.map((r) => r.pipeline.requestsPerSec / r.baseline.requestsPerSec)) * 100) / 100,
        ratios: rounds.map((r) => Math.round((r.pipeline.requestsPerSec / r.baseline.requestsPerSec) * 100) / 100).join(' '),
      };
    } finally {
      await sides.stop();
    }
  },
};
