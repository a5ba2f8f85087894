/**
 * Records workflow histories for the replay tests (test/<area>/replay.test.ts): the subscription
 * workflow's for billing, the payment workflow's for payments, the order workflow's for commerce, the
 * call workflow's for communications, the loyalty workflow's for rewards. Run that area's tests against a
 * Temporal server first, then, against the same server:
 *
 *   scripts/node24.sh node scripts/record-histories.ts [--area billing|payments|commerce|communications|rewards] [--address 127.0.0.1:7299]
 *        [--limit 6] [--query '<visibility query>']
 *
 * It picks the most recent closed workflows of the area's type (every run of a continued-as-new
 * subscription is its own history) and writes each as test/<area>/histories/<workflow id>-<run id prefix>.json.
 * Keep a mix: for billing a long life with continue-as-new, dunning, a pause during collection; for
 * payments a plain charge, a decline, a split paid and a split reversed — recorded before a change
 * to the workflow, so the test proves the histories of running workflows still replay after it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';

const { History } = proto.temporal.api.history.v1;

const args = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const address = opt('address', process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7299');
const limit = Number(opt('limit', '6'));
const WORKFLOW_TYPES: Record<string, string> = { billing: 'subscriptionWorkflow', payments: 'paymentWorkflow', commerce: 'orderWorkflow', communications: 'callWorkflow', rewards: 'loyaltyWorkflow' };
const area = opt('area', 'billing');
if (!WORKFLOW_TYPES[area]) throw new Error(`--area must be one of: ${Object.keys(WORKFLOW_TYPES).join(', ')}`);
const query = opt('query', `WorkflowType = '${WORKFLOW_TYPES[area]}' AND ExecutionStatus != 'Running'`);
const out = fileURLToPath(new URL(`../test/${area}/histories/`, import.meta.url));

const connection = await Connection.connect({ address });
const client = new Client({ connection, namespace: opt('namespace', process.env.TEMPORAL_NAMESPACE ?? 'default') });
mkdirSync(out, { recursive: true });
let n = 0;
for await (const wf of client.workflow.list({ query })) {
  if (n >= limit) break;
  const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
  const file = `${out}${wf.workflowId}-${wf.runId.slice(0, 8)}.json`;
    // protobuf's own object form (enums and 64-bit numbers as strings, bytes as base64); the test
  // reads it back with History.fromObject.
  const json = History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
  writeFileSync(file, JSON.stringify(json));
  console.log(`${file} (${history.events?.length ?? 0} events, ${wf.status.name})`);
  n++;
}
await connection.close();
