/**
 * `scripts/node24.sh node bench/temporal-shapes-probe.ts`: what the shape of a workflow-backed
 * request costs, with none of the platform's work in it. A worker in this process runs the
 * workflows of bench/temporal-shapes-workflows.ts, and 10 clients start and await each shape for
 * 8 s, in alternating rounds: a plain start and result (the empty workflow of target 2's
 * baseline), the same with two no-op local activities and a search-attribute upsert (a payment's
 * Temporal shape, started plainly), and both again through update-with-start (how the platform
 * starts a payment). Prints per shape the rate, its ratio to the empty workflow's, and the CPU
 * milliseconds per operation of this process and of the Temporal server.
 * Needs `TEMPORAL_ADDRESS` (a dev server with the BpStatus search attribute, as the bench's).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { cpuTicksByComm, cpuTicksOf, ticksSince, TICKS_PER_SECOND } from './cpu.ts';
import { median } from './harness.ts';
import type { Shape, plainShape, updateShape } from './temporal-shapes-workflows.ts';

const CLIENTS = 10;
const SECONDS = 8;
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 3);
const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const taskQueue = `shapes-${randomUUID()}`;

const worker = await Worker.create({
  connection: await NativeConnection.connect({ address }),
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./temporal-shapes-workflows.ts', import.meta.url)),
  activities: { noop: async () => null },
});
const running = worker.run();
const connection = await Connection.connect({ address });
const client = new Client({ connection });

type Run = (shape: Shape) => Promise<unknown>;
const plain: Run = (shape) =>
  client.workflow.execute<typeof plainShape>('plainShape', { taskQueue, workflowId: `shape-${randomUUID()}`, args: [shape] });
const viaUpdate: Run = (shape) =>
  client.workflow.executeUpdateWithStart('outcome', {
    startWorkflowOperation: new WithStartWorkflowOperation<typeof updateShape>('updateShape', {
      taskQueue, workflowId: `shape-${randomUUID()}`, args: [shape], workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });

const SHAPES: { name: string; run: Run; shape: Shape }[] = [
  { name: 'empty, plain start (the baseline)', run: plain, shape: { locals: 0, status: false } },
  { name: 'empty, update-with-start', run: viaUpdate, shape: { locals: 0, status: false } },
  { name: '1 local activity + status, plain start', run: plain, shape: { locals: 1, status: true } },
  { name: '1 local activity + status, update-with-start', run: viaUpdate, shape: { locals: 1, status: true } },
  { name: '2 local activities + status, plain start', run: plain, shape: { locals: 2, status: true } },
  { name: '2 local activities + status, update-with-start (a payment)', run: viaUpdate, shape: { locals: 2, status: true } },
];

async function measure(run: Run, shape: Shape) {
  const server = cpuTicksByComm('temporal');
  const own = cpuTicksOf(process.pid);
  let count = 0;
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (Date.now() < until) {
      await run(shape);
      count++;
    }
  }));
  const ms = (ticks: number) => Math.round(((ticks / TICKS_PER_SECOND) * 1000 * 10) / count) / 10;
  return { perSec: count / SECONDS, serverMs: ms(ticksSince(server, cpuTicksByComm('temporal'))), ownMs: ms(cpuTicksOf(process.pid) - own) };
}

try {
  for (const { run, shape } of SHAPES) await measure(run, shape); // warm-up
  const results = SHAPES.map(() => [] as Awaited<ReturnType<typeof measure>>[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, { run, shape }] of SHAPES.entries()) results[i]!.push(await measure(run, shape));
  }
  const baseline = results[0]!;
  for (const [i, { name }] of SHAPES.entries()) {
    const rows = results[i]!;
    console.log(JSON.stringify({
      shape: name,
      per_sec: Math.round(median(rows.map((r) => r.perSec))),
      ratio_to_empty: median(rows.map((r, k) => Math.round((r.perSec / baseline[k]!.perSec) * 100) / 100)),
      temporal_server_cpu_ms: median(rows.map((r) => r.serverMs)),
      worker_and_client_cpu_ms: median(rows.map((r) => r.ownMs)),
    }));
  }
} finally {
  worker.shutdown();
  await running;
  await connection.close();
}
