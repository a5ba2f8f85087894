/**
 * One report render in a process of its own, for the memory benchmark (bench/analytics.ts): the
 * same code the report activity runs (a cursor over PostgreSQL → renderer → file), on the
 * account and window given in the environment, in a worker thread as the activity runs it. Prints one
 * JSON line: rows, milliseconds, bytes, the process's resident memory before the render and its peak
 * (maxRSS: the whole process, Node's own ~40 MB included).
 * Env: DATABASE_URL, ACCOUNT_ID, FORMAT (pdf|excel|csv|json), REPORT_TYPE, START, END, OUT.
 */
import { statSync } from 'node:fs';
import { renderInThread } from '../domain/analytics/render-runner.ts';
import type { ReportFormat, ReportType } from '../domain/analytics/schemas.ts';

const env = process.env;
const started = performance.now();
const baseline = Math.round(process.memoryUsage().rss / 1048576);
let total = 0;
const rows = await renderInThread({
  databaseUrl: env.DATABASE_URL!, format: env.FORMAT as ReportFormat, path: env.OUT!, holdAtHalf: false,
  params: { scope: { accountId: env.ACCOUNT_ID!, livemode: false }, reportType: (env.REPORT_TYPE ?? 'sales') as ReportType, start: env.START!, end: env.END!, timezone: 'UTC', filters: {} },
  parameters: [['Report', env.REPORT_TYPE ?? 'sales'], ['From', env.START!], ['To', env.END!]],
}, new AbortController().signal, {
  progress: async (_done, t) => { total = t; },
  held: async () => undefined,
});
console.log(JSON.stringify({
  format: env.FORMAT, rows, expected_rows: total, ms: Math.round(performance.now() - started), bytes: statSync(env.OUT!).size,
  baseline_rss_mb: baseline, max_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
}));
