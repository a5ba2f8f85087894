import { Client, Connection } from '@temporalio/client';
import { autocannonRun, emptyWorkflows, type Scenario } from './harness.ts';

const CLIENTS = 10;
const DURATION_S = 10;

/**
 * Calls started per second end to end — HTTP → the caller's number checked → update-with-start of
 * `call-<id>` → its first activity writes the call → 201 `queued` — at 10 concurrent clients, as a
 * ratio against the bare Temporal figure in the same run: an empty workflow started and completed on
 * the same (communications) task queue. The calls then run on the sandbox carrier (a 30-second call
 * in 0.6 s), competing with the next starts for the same worker, as in production.
 */
export const scenario: Scenario = {
  name: 'communications: POST /v3/communications/calls end to end vs an empty Temporal workflow',
  env: { COMMUNICATIONS_SANDBOX_SECOND_MS: '20' },
  async run(platform) {
    const key = await platform.newKey();
    const provision = await fetch(`${platform.url}/v3/communications/numbers/provision`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ number_type: 'local', area_code: '415', features: ['voice'] }),
    });
    const from = ((await provision.json()) as { number: string }).number;
    const request = {
      url: `${platform.url}/v3/communications/calls`, method: 'POST' as const, connections: CLIENTS,
      body: JSON.stringify({ to_number: '+14155550123', from_number: from, routing_options: { ring_timeout: 30 } }),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    };
    await autocannonRun({ ...request, duration: 3 }); // warm-up
    const calls = await autocannonRun({ ...request, duration: DURATION_S });

    const connection = await Connection.connect({ address: platform.temporalAddress });
    try {
      const client = new Client({ connection });
      const taskQueue = `${platform.taskQueuePrefix}communications`;
      await emptyWorkflows(client, taskQueue, CLIENTS, 2); // warm-up
      const empty = await emptyWorkflows(client, taskQueue, CLIENTS, DURATION_S);
      const [made] = await platform.sql<{ n: string; done: string }>(`select count(*) as n, count(*) filter (where status = 'completed') as done from comm_calls`);
      return {
        clients: CLIENTS,
        calls_started_per_sec: calls.requestsPerSec,
        calls_p50_ms: calls.p50,
        calls_p99_ms: calls.p99,
        calls_non2xx: calls.non2xx + calls.errors,
        calls_total: Number(made?.n ?? 0),
        calls_completed_by_then: Number(made?.done ?? 0),
        empty_workflows_per_sec: empty.perSec,
        empty_workflow_p50_ms: empty.p50,
        ratio_calls_to_empty: empty.perSec ? Math.round((calls.requestsPerSec / empty.perSec) * 100) / 100 : null,
      };
    } finally {
      await connection.close();
    }
  },
};
