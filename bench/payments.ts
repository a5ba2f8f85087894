import { Client, Connection } from '@temporalio/client';
import { settled } from './cpu.ts';
import { autocannonRun, emptyWorkflows, median, paymentsLoad, subscriptionsLoad, type LoadResult, type Scenario } from './harness.ts';

const CLIENTS = 10;
const ROUNDS = 3;
const ROUND_S = 5;

type Round = { payments: LoadResult; subscriptions: LoadResult; empty: Awaited<ReturnType<typeof emptyWorkflows>> };

/**
 * Payments per second end to end — HTTP → update-with-start → payment workflow (record, charge on
 * the sandbox gateway, settle with its event) → response — and subscriptions created per second
 * (HTTP → tokenize → update-with-start → the subscription workflow's first write → response), each
 * at 10 concurrent clients, next to the bare Temporal figure in the same run: 10 clients starting
 * and completing an empty workflow.
 */
export const scenario: Scenario = {
  name: 'payments: POST /v3/payments/process and POST /v3/subscriptions end to end vs an empty Temporal workflow',
  async run(platform) {
    const paying = await paymentsLoad(platform, CLIENTS);
    // Monthly subscriptions of one customer to one plan (each request a new subscription).
    const subscribing = await subscriptionsLoad(platform, CLIENTS);

    const connection = await Connection.connect({ address: platform.temporalAddress });
    try {
      const client = new Client({ connection });
      const taskQueue = `${platform.taskQueuePrefix}payments`;
      // Warm-up, then alternating rounds (the ratios are the medians of each round's own ratio).
      await autocannonRun({ ...paying, duration: 2 });
      await autocannonRun({ ...subscribing, duration: 2 });
      await emptyWorkflows(client, taskQueue, CLIENTS, 2);
      const rounds: Round[] = [];
      // Each measurement starts with the server idle: a round's payments and subscriptions leave work
      // behind (their events dispatched, workflows finishing) that would otherwise slow the next one.
      const settle = () => settled(platform.pid);
      for (let i = 0; i < ROUNDS; i++) {
        rounds.push({
          payments: await settle().then(() => autocannonRun({ ...paying, duration: ROUND_S })),
          subscriptions: await settle().then(() => autocannonRun({ ...subscribing, duration: ROUND_S })),
          empty: await settle().then(() => emptyWorkflows(client, taskQueue, CLIENTS, ROUND_S)),
        });
      }
      const [charged] = await platform.sql<{ n: string }>(`select count(*) as n from payments where status = 'succeeded'`);
      const of = (pick: (r: Round) => number) => median(rounds.map(pick));
      const ratios = (pick: (r: Round) => number) => rounds.map((r) => Math.round((pick(r) / r.empty.perSec) * 100) / 100);
      return {
        clients: CLIENTS,
        rounds: ROUNDS,
        payments_per_sec: of((r) => r.payments.requestsPerSec),
        payments_p50_ms: of((r) => r.payments.p50),
        payments_p99_ms: of((r) => r.payments.p99),
        payments_non2xx: rounds.reduce((n, r) => n + r.payments.non2xx + r.payments.errors, 0),
        payments_succeeded_total: Number(charged?.n ?? 0),
        ratio: median(ratios((r) => r.payments.requestsPerSec)),
        ratios: ratios((r) => r.payments.requestsPerSec).join(' '),
        subscriptions_per_sec: of((r) => r.subscriptions.requestsPerSec),
        subscriptions_p50_ms: of((r) => r.subscriptions.p50),
        subscriptions_p99_ms: of((r) => r.subscriptions.p99),
        subscriptions_non2xx: rounds.reduce((n, r) => n + r.subscriptions.non2xx + r.subscriptions.errors, 0),
        subscriptions_ratio: median(ratios((r) => r.subscriptions.requestsPerSec)),
        subscriptions_ratios: ratios((r) => r.subscriptions.requestsPerSec).join(' '),
        empty_workflows_per_sec: of((r) => r.empty.perSec),
        empty_workflow_p50_ms: of((r) => r.empty.p50),
        empty_workflow_p99_ms: of((r) => r.empty.p99),
      };
    } finally {
      await connection.close();
    }
  },
};
