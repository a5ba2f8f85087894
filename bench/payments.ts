import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { autocannonRun, percentile, type Scenario } from './harness.ts';

const CLIENTS = 10;
const DURATION_S = 10;

/** `clients` loops starting and awaiting an empty workflow for `seconds`: the bare Temporal figure. */
async function emptyWorkflows(client: Client, taskQueue: string, clients: number, seconds: number) {
  const latencies: number[] = [];
  const until = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < until) {
      const t0 = performance.now();
      await client.workflow.execute('paymentsBaselineWorkflow', { taskQueue, workflowId: `bench-empty-${randomUUID()}` });
      latencies.push(performance.now() - t0);
    }
  }));
  latencies.sort((a, b) => a - b);
  return { perSec: Math.round(latencies.length / seconds), p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) };
}

/**
 * Payments per second end to end — HTTP → update-with-start → payment workflow (record, charge on
 * the sandbox gateway, settle with its event) → response — at 10 concurrent clients, next to the
 * bare Temporal figure in the same run: 10 clients starting and completing an empty workflow.
 */
export const scenario: Scenario = {
  name: 'payments: POST /v3/payments/process end to end vs an empty Temporal workflow',
  async run(platform) {
    const key = await platform.newKey();
    const body = JSON.stringify({
      amount: 1999, currency: 'USD', description: 'bench',
      payment_method: { type: 'card', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' } },
    });
    const request = {
      url: `${platform.url}/v3/payments/process`, method: 'POST' as const, body, connections: CLIENTS,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    };
    await autocannonRun({ ...request, duration: 3 }); // warm-up
    const payments = await autocannonRun({ ...request, duration: DURATION_S });

    const connection = await Connection.connect({ address: platform.temporalAddress });
    try {
      const client = new Client({ connection });
      const taskQueue = `${platform.taskQueuePrefix}payments`;
      await emptyWorkflows(client, taskQueue, CLIENTS, 2); // warm-up
      const empty = await emptyWorkflows(client, taskQueue, CLIENTS, DURATION_S);
      const [charged] = await platform.sql<{ n: string }>(`select count(*) as n from payments where status = 'succeeded'`);
      return {
        clients: CLIENTS,
        payments_per_sec: payments.requestsPerSec,
        payments_p50_ms: payments.p50,
        payments_p99_ms: payments.p99,
        payments_non2xx: payments.non2xx + payments.errors,
        payments_succeeded_total: Number(charged?.n ?? 0),
        empty_workflows_per_sec: empty.perSec,
        empty_workflow_p50_ms: empty.p50,
        empty_workflow_p99_ms: empty.p99,
      };
    } finally {
      await connection.close();
    }
  },
};
