import { autocannonRun, spawnServer, stopServer, type Scenario } from './harness.ts';

/**
 * GET /v3/customers/{id} through the full pipeline (auth, rate limits in PostgreSQL, request log,
 * scoping, serialisation) against a raw node:http + pg server running the same SELECT.
 */
export const scenario: Scenario = {
  name: 'foundation: GET /v3/customers/{id} vs raw node:http + pg',
  async run(platform) {
    const key = await platform.newKey();
    const created = await fetch(`${platform.url}/v3/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', first_name: 'Bench', last_name: 'Mark', segments: ['vip'] }),
    });
    const customer = (await created.json()) as { id: string };
    const [row] = await platform.sql<{ account_id: string }>('select account_id from customers where id = $1', [customer.id]);

    const { child, info } = await spawnServer('./baseline-server.ts', { DATABASE_URL: platform.dbUrl, BENCH_ACCOUNT_ID: row!.account_id });
    try {
      const connections = 50;
      await autocannonRun({ url: `${info.url}/v3/customers/${customer.id}`, duration: 3, connections }); // warm-up
      const baseline = await autocannonRun({ url: `${info.url}/v3/customers/${customer.id}`, connections });
      await autocannonRun({ url: `${platform.url}/v3/customers/${customer.id}`, duration: 3, connections, headers: { authorization: `Bearer ${key}` } });
      const pipeline = await autocannonRun({ url: `${platform.url}/v3/customers/${customer.id}`, connections, headers: { authorization: `Bearer ${key}` } });
      return {
        connections,
        baseline_rps: baseline.requestsPerSec,
        baseline_p99_ms: baseline.p99,
        pipeline_rps: pipeline.requestsPerSec,
        pipeline_p99_ms: pipeline.p99,
        pipeline_p50_ms: pipeline.p50,
        pipeline_non2xx: pipeline.non2xx + pipeline.errors,
        ratio: Math.round((pipeline.requestsPerSec / baseline.requestsPerSec) * 100) / 100,
      };
    } finally {
      await stopServer(child);
    }
  },
};
