/**
 * One report render in a process of its own, for the memory benchmark (bench/analytics.ts): the
 * same code the report activity runs (keyset pages from PostgreSQL → renderer → file), on the
 * account and window given in the environment. Prints one JSON line: rows, milliseconds, bytes and
 * the process's peak resident memory (maxRSS, which includes Node's own ~50 MB).
 * Env: DATABASE_URL, ACCOUNT_ID, FORMAT (pdf|excel|csv|json), REPORT_TYPE, START, END, OUT.
 */
import { statSync } from 'node:fs';
import pg from 'pg';
import { countRows, reportChart, reportRows, reportSource, reportTotals, type ReportParams } from '../domain/analytics/report-data.ts';
import { renderReport } from '../domain/analytics/render.ts';
import type { ReportFormat, ReportType } from '../domain/analytics/schemas.ts';

const env = process.env;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
const params: ReportParams = {
  scope: { accountId: env.ACCOUNT_ID!, livemode: false }, reportType: (env.REPORT_TYPE ?? 'sales') as ReportType,
  start: env.START!, end: env.END!, timezone: 'UTC', filters: {},
};
const started = performance.now();
let peakHeap = 0;
const sampler = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
}, 50);
const [total, totals, chart] = await Promise.all([countRows(pool, params), reportTotals(pool, params), reportChart(pool, params)]);
const source = reportSource(params.reportType);
const rows = await renderReport(env.FORMAT as ReportFormat, env.OUT!, {
  title: source.title, section: source.section, parameters: [['Report', params.reportType], ['From', params.start], ['To', params.end]],
  columns: source.columns, totals, chart, chartCurrency: 'USD', rows: reportRows(pool, params),
  onProgress: () => undefined,
});
clearInterval(sampler);
await pool.end();
console.log(JSON.stringify({
  format: env.FORMAT, rows, expected_rows: total, ms: Math.round(performance.now() - started), bytes: statSync(env.OUT!).size,
  max_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024), peak_heap_mb: Math.round(peakHeap / 1048576),
}));
