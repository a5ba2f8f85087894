/**
 * A report render in a worker thread (started by `renderInThread`): its own PostgreSQL connection,
 * its own V8 heap with a small young generation, so the renderers' garbage (pdfkit makes a lot)
 * is collected early and the worker process stays within its memory budget; and the worker's
 * event loop stays free for heartbeats and other activities while a PDF is laid out.
 * Messages to the parent: `{ progress }`, `{ held }` (sandbox hold, waits for `resume`), `{ done }`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { countRows, reportChart, reportRows, reportSource, type ReportParams, type Row, reportTotals } from './report-data.ts';
import { renderReport } from './render.ts';
import type { ReportFormat } from './schemas.ts';

export interface RenderJob {
  databaseUrl: string;
  params: ReportParams;
  format: ReportFormat;
  path: string;
  parameters: [string, string][];
  /** Sandbox `hold_at_half`: stop after half the rows until the parent says `resume`. */
  holdAtHalf: boolean;
}

const port = parentPort!;
const job = workerData as RenderJob;
const pool = new pg.Pool({ connectionString: job.databaseUrl, max: 1 });

async function* holding(rows: AsyncIterable<Row>, total: number): AsyncGenerator<Row> {
  let n = 0;
  const half = Math.max(1, Math.floor(total / 2));
  for await (const r of rows) {
    if (n === half) {
      const resumed = new Promise<void>((resolve) => port.once('message', () => resolve()));
      port.postMessage({ held: n });
      await resumed;
    }
    n += 1;
    yield r;
  }
}

try {
  const [total, totals, chart] = await Promise.all([countRows(pool, job.params), reportTotals(pool, job.params), reportChart(pool, job.params)]);
  port.postMessage({ total });
  const source = reportSource(job.params.reportType);
  const rows = reportRows(pool, job.params);
  const done = await renderReport(job.format, job.path, {
    title: source.title, section: source.section, parameters: job.parameters, columns: source.columns, totals, chart,
    chartCurrency: chart ? (totals.lines.find((l) => l.currency)?.currency ?? null) : null,
    rows: job.holdAtHalf ? holding(rows, total) : rows,
    onProgress: (n) => port.postMessage({ progress: n, total }),
  });
  port.postMessage({ done });
} finally {
  await pool.end();
}
