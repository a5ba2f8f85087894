import { expect } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { client } from '../support/http.ts';

/** A card body for the API; the numbers are the sandbox's test cards. */
export function cardBody(number: string, extra: Partial<{ exp_month: number; exp_year: number; cvc: string }> = {}) {
  return { type: 'card', card: { number, exp_month: 12, exp_year: new Date().getUTCFullYear() + 2, cvc: number.startsWith('3') ? '1234' : '123', ...extra } };
}

export const CVCS = ['123', '1234'];

/** Polls the status endpoint until `done` holds (the workflow finishes on its own schedule). */
export async function waitForPayment(http: ReturnType<typeof client>, key: string, id: string, done: (body: any) => boolean, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await http(`/v3/payments/${id}/status`, { key });
    expect(res.status).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`payment ${id} did not reach the expected state; last: ${res.text}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Everything written to stdout/stderr while the file runs, to grep for card data afterwards. */
export function captureOutput(): { text(): string; stop(): void } {
  const chunks: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    chunks.push(String(chunk));
    return (out as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    chunks.push(String(chunk));
    return (err as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  return {
    text: () => chunks.join(''),
    stop() {
      process.stdout.write = out;
      process.stderr.write = err;
    },
  };
}

/**
 * Searches the whole database (every row of every table, as text, bytea decoded too), the
 * captured logs and the history of every workflow the file ran, for any of `secrets`.
 * Returns where each was found (empty when clean).
 */
export async function findCardData(platform: TestPlatform, secrets: string[], logs: string): Promise<string[]> {
  const found: string[] = [];
  const needles = secrets.flatMap((s) => [s, Buffer.from(s).toString('hex')]);
  const tables = await platform.sql<{ table_name: string }>(
    `select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`);
  for (const { table_name } of tables) {
    const rows = await platform.sql<{ dump: string | null }>(`select string_agg(t::text, E'\\n') as dump from "${table_name}" t`);
    const dump = rows[0]?.dump ?? '';
    for (const n of needles) if (dump.includes(n)) found.push(`database table ${table_name} contains ${n}`);
  }
  for (const n of secrets) if (logs.includes(n)) found.push(`logs contain ${n}`);

  const ids = new Set<string>();
  for (const r of await platform.sql<{ workflow_id: string }>('select workflow_id from payments union select workflow_id from payment_refunds where workflow_id is not null')) ids.add(r.workflow_id);
  for await (const wf of platform.temporal.client.workflow.list({ query: `TaskQueue = '${platform.temporal.taskQueue('payments')}'` })) ids.add(wf.workflowId);
  for (const id of ids) {
    const history = await platform.temporal.client.workflow.getHandle(id).fetchHistory();
    const text = textOf(history);
    for (const n of secrets) if (text.includes(n)) found.push(`workflow history ${id} contains ${n}`);
  }
  expect(ids.size).toBeGreaterThan(0);
  return found;
}

/** Every string and every byte array (payload data, decoded as UTF-8) inside a history, joined. */
function textOf(value: unknown, out: string[] = [], seen = new Set<unknown>()): string {
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (value && typeof value === 'object' && !seen.has(value)) {
    seen.add(value);
    for (const v of Object.values(value)) textOf(v, out, seen);
  }
  return out.join('\n');
}
