import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { stringify } from 'csv-stringify';
import type ExcelJSModule from 'exceljs';
import type PDFDocumentClass from 'pdfkit';
import { toDecimalString } from '../money.ts';
import { PAGE_ROWS, majorValue, type Column, type Row, type Totals } from './report-data.ts';
import type { ReportFormat } from './schemas.ts';

/**
 * Renderers: each takes the rows as an async iterable and writes them to a file as they come, so
 * a report of any length renders in bounded memory (measured in bench/analytics.ts). PDF with
 * pdfkit (title, parameters, totals, a bar chart, a table whose header repeats on every page),
 * Excel with exceljs's streaming writer (typed cells, frozen header row, a sheet per section),
 * CSV with csv-stringify (RFC 4180: CRLF, quotes doubled; UTF-8), JSON as one document.
 */

export const FORMAT_FILES: Record<ReportFormat, { extension: string; contentType: string }> = {
  pdf: { extension: 'pdf', contentType: 'application/pdf' },
  excel: { extension: 'xlsx', contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
  csv: { extension: 'csv', contentType: 'text/csv; charset=utf-8' },
  json: { extension: 'json', contentType: 'application/json; charset=utf-8' },
};

export interface RenderInput {
  title: string;
  section: string;
  /** Label/value pairs describing the report (type, dates, zone, filters). */
  parameters: [string, string][];
  columns: Column[];
  totals: Totals;
  chart: { date: string; value: number }[] | null;
  /** Currency of the chart's values, when one. */
  chartCurrency: string | null;
  rows: AsyncIterable<Row>;
  /** Called after every `PAGE_ROWS` rows and at the end, with the rows written so far. */
  onProgress(rows: number): void | Promise<void>;
  /** Aborts the render (the report was canceled). */
  signal?: AbortSignal;
}

/** Exact decimal text of a money cell. */
function moneyText(minor: number | null, currency: string | null): string {
  if (minor === null) return '';
  return currency ? toDecimalString(minor, currency) : String(minor);
}

function cellText(c: Column, r: Row): string {
  const v = r[c.key];
  if (v === null || v === undefined) return '';
  if (c.type === 'money') return moneyText(Number(v), (r.currency as string | null) ?? null);
  if (c.type === 'timestamp') return (v as unknown) instanceof Date ? (v as unknown as Date).toISOString() : String(v);
  return String(v);
}

function totalText(t: Totals['lines'][number]): string {
  return t.currency ? `${moneyText(t.value, t.currency)} ${t.currency}` : String(t.value);
}

async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

async function finish(stream: WriteStream): Promise<void> {
  stream.end();
  await once(stream, 'close');
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('render aborted');
}

/** Renders `input` into `path` in `format`; returns the number of rows written. */
export async function renderReport(format: ReportFormat, path: string, input: RenderInput): Promise<number> {
  switch (format) {
    case 'csv': return renderCsv(path, input);
    case 'json': return renderJson(path, input);
    case 'excel': return renderExcel(path, input);
    case 'pdf': return renderPdf(path, input);
  }
}

async function eachRow(input: RenderInput, write: (r: Row) => Promise<void> | void): Promise<number> {
  let n = 0;
  for await (const r of input.rows) {
    await write(r);
    n += 1;
    if (n % PAGE_ROWS === 0) {
      checkAborted(input.signal);
      await input.onProgress(n);
    }
  }
  checkAborted(input.signal);
  await input.onProgress(n);
  return n;
}

async function renderCsv(path: string, input: RenderInput): Promise<number> {
  const out = createWriteStream(path);
  const csv = stringify({ header: true, columns: input.columns.map((c) => ({ key: c.key, header: c.header })), record_delimiter: '\r\n' });
  csv.pipe(out);
  const n = await eachRow(input, async (r) => {
    const record = Object.fromEntries(input.columns.map((c) => [c.key, cellText(c, r)]));
    if (!csv.write(record)) await once(csv, 'drain');
  });
  csv.end();
  await once(out, 'close');
  return n;
}

async function renderJson(path: string, input: RenderInput): Promise<number> {
  const out = createWriteStream(path);
  const head = {
    object: 'report_data', title: input.title,
    parameters: Object.fromEntries(input.parameters),
    totals: input.totals.lines.map((t) => ({ label: t.label, value: t.currency ? moneyText(t.value, t.currency) : t.value, currency: t.currency })),
    chart: input.chart?.map((p) => ({ date: p.date, value: moneyText(p.value, input.chartCurrency) })) ?? null,
    columns: input.columns.map((c) => ({ key: c.key, header: c.header, type: c.type })),
  };
  await write(out, `${JSON.stringify(head).slice(0, -1)},"rows":[`);
  let first = true;
  const n = await eachRow(input, async (r) => {
    const record = Object.fromEntries(input.columns.map((c) => {
      const v = r[c.key];
      if (v === null || v === undefined) return [c.key, null];
      if (c.type === 'money') return [c.key, moneyText(Number(v), (r.currency as string | null) ?? null)];
      if (c.type === 'integer') return [c.key, Number(v)];
      return [c.key, cellText(c, r)];
    }));
    await write(out, (first ? '\n' : ',\n') + JSON.stringify(record));
    first = false;
  });
  await write(out, ']}\n');
  await finish(out);
  return n;
}

// The renderers' libraries are loaded by the format that needs them (exceljs alone weighs ~40 MB).
async function renderExcel(path: string, input: RenderInput): Promise<number> {
  const ExcelJS: typeof ExcelJSModule = (await import('exceljs')).default;
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useStyles: true, useSharedStrings: false });
  workbook.creator = 'Business Platform';
  const summary = workbook.addWorksheet('Summary', { views: [{ state: 'frozen', ySplit: 1 }] });
  summary.columns = [{ header: input.title, key: 'label', width: 30 }, { header: '', key: 'value', width: 30 }, { header: '', key: 'currency', width: 10 }];
  summary.getRow(1).font = { bold: true };
  for (const [label, value] of input.parameters) summary.addRow({ label, value }).commit();
  summary.addRow({}).commit();
  summary.addRow({ label: 'Totals' }).commit();
  for (const t of input.totals.lines) {
    const row = summary.addRow({ label: t.label, value: t.currency ? majorValue(t.value, t.currency) : t.value, currency: t.currency ?? '' });
    if (t.currency) row.getCell('value').numFmt = '#,##0.00';
    row.commit();
  }
  summary.commit();

  const sheet = workbook.addWorksheet(input.section.slice(0, 31), { views: [{ state: 'frozen', ySplit: 1 }] });
  sheet.columns = input.columns.map((c) => ({
    header: c.header, key: c.key, width: Math.max(10, Math.round(c.width / 6)),
    style: c.type === 'money' ? { numFmt: '#,##0.00' } : c.type === 'date' ? { numFmt: 'yyyy-mm-dd' } : c.type === 'timestamp' ? { numFmt: 'yyyy-mm-dd hh:mm:ss' } : {},
  }));
  sheet.getRow(1).font = { bold: true };
  sheet.getRow(1).commit();
  const n = await eachRow(input, (r) => {
    const values = Object.fromEntries(input.columns.map((c) => {
      const v = r[c.key];
      if (v === null || v === undefined) return [c.key, null];
      switch (c.type) {
        case 'money': return [c.key, majorValue(Number(v), (r.currency as string | null) ?? null)];
        case 'integer': return [c.key, Number(v)];
        case 'date': return [c.key, new Date(`${String(v)}T00:00:00Z`)];
        case 'timestamp': return [c.key, (v as unknown) instanceof Date ? v : new Date(String(v))];
        default: return [c.key, String(v)];
      }
    }));
    sheet.addRow(values).commit();
  });
  sheet.commit();
  await workbook.commit();
  return n;
}

const PAGE = { size: 'A4' as const, layout: 'landscape' as const, margin: 36 };
const ROW_HEIGHT = 14;

async function renderPdf(path: string, input: RenderInput): Promise<number> {
  const PDFDocument: typeof PDFDocumentClass = (await import('pdfkit')).default;
  const doc = new PDFDocument({ size: PAGE.size, layout: PAGE.layout, margin: PAGE.margin, bufferPages: false, info: { Title: input.title } });
  const out = createWriteStream(path);
  doc.pipe(out);
  const left = PAGE.margin;
  const bottom = () => doc.page.height - PAGE.margin;

  doc.font('Helvetica-Bold').fontSize(18).text(input.title, left, PAGE.margin);
  doc.moveDown(0.5).font('Helvetica').fontSize(9);
  for (const [label, value] of input.parameters) doc.text(`${label}: ${value}`);
  doc.moveDown(0.5).font('Helvetica-Bold').fontSize(11).text('Totals');
  doc.font('Helvetica').fontSize(9);
  for (const t of input.totals.lines) doc.text(`${t.label}: ${totalText(t)}`);

  if (input.chart && input.chart.length) drawChart(doc, input.chart, input.chartCurrency);

  const header = (y: number) => {
    doc.font('Helvetica-Bold').fontSize(8);
    let x = left;
    for (const c of input.columns) {
      doc.text(c.header, x, y, { width: c.width - 4, lineBreak: false, ellipsis: true, height: ROW_HEIGHT });
      x += c.width;
    }
    doc.moveTo(left, y + ROW_HEIGHT - 3).lineTo(x, y + ROW_HEIGHT - 3).lineWidth(0.5).stroke();
    doc.font('Helvetica').fontSize(8);
    return y + ROW_HEIGHT;
  };
  doc.addPage();
  let y = header(PAGE.margin);
  let page = 1;
  const n = await eachRow(input, async (r) => {
    if (y + ROW_HEIGHT > bottom()) {
      doc.addPage();
      page += 1;
      y = header(PAGE.margin);
      // Let the file stream take what the page produced before the next one is built.
      if (page % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    let x = left;
    for (const c of input.columns) {
      doc.text(cellText(c, r), x, y, { width: c.width - 4, lineBreak: false, ellipsis: true, height: ROW_HEIGHT, align: c.type === 'money' || c.type === 'integer' ? 'right' : 'left' });
      x += c.width;
    }
    y += ROW_HEIGHT;
  });
  doc.end();
  await once(out, 'close');
  return n;
}

function drawChart(doc: PDFKit.PDFDocument, series: { date: string; value: number }[], currency: string | null): void {
  const x0 = PAGE.margin;
  const top = doc.y + 16;
  const width = doc.page.width - 2 * PAGE.margin;
  const height = 160;
  doc.font('Helvetica-Bold').fontSize(11).text(`Per day${currency ? ` (${currency})` : ''}`, x0, top - 14);
  const max = Math.max(1, ...series.map((p) => Math.abs(p.value)));
  const barWidth = width / series.length;
  doc.rect(x0, top, width, height).lineWidth(0.5).stroke();
  series.forEach((p, i) => {
    const h = (Math.abs(p.value) / max) * (height - 4);
    doc.rect(x0 + i * barWidth + barWidth * 0.1, top + height - h, Math.max(barWidth * 0.8, 0.5), h).fill(p.value < 0 ? '#c0392b' : '#2e86de');
  });
  doc.fillColor('black').font('Helvetica').fontSize(7);
  doc.text(series[0]!.date, x0, top + height + 2, { lineBreak: false });
  doc.text(series.at(-1)!.date, x0 + width - 50, top + height + 2, { lineBreak: false });
  doc.text(`max ${moneyText(max, currency)}`, x0 + 2, top + 2, { lineBreak: false });
}
