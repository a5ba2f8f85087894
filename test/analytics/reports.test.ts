import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { extractText } from 'unpdf';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { downloadSigner } from '../../domain/analytics/reports.ts';
import { Fixtures, adminCaller } from './support.ts';

/**
 * Report generation through HTTP and a real worker: one workflow per report (`report-rpt_…`),
 * each format opened back and checked, the signed download URL, cancel mid-way (sandbox scenario
 * hold_at_half), failure, retention by the maintenance workflow, admin steering.
 */

const dir = mkdtempSync(join(tmpdir(), 'bp-reports-'));
let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;

usePlatform({ worker: true, ownAccount: true, env: { ANALYTICS_REPORTS_DIR: dir, ANALYTICS_REPORT_RETENTION_DAYS: '3', RATE_LIMIT_PER_MINUTE: '10000' } }, (t) => ({ platform, http, key, accountId } = t));

const RANGE = { start: '2025-03-01', end: '2025-03-31' };
let customers: string[] = [];

async function generate(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await http('/v3/analytics/reports/generate', { key, body: { date_range: RANGE, ...body }, headers });
  expect(res.status, res.text).toBe(202);
  return res;
}

async function waitFor(id: string, done: (r: any) => boolean, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await http(`/v3/analytics/reports/${id}`, { key });
    expect(res.status, res.text).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`report ${id} did not get there; last: ${res.text}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

const finished = (r: any) => ['succeeded', 'failed', 'canceled'].includes(r.status);

async function download(url: string, k: string | null = key): Promise<{ status: number; type: string | null; disposition: string | null; body: Buffer }> {
  const res = await fetch(platform.url + url, { headers: k === null ? {} : { authorization: `Bearer ${k}` } });
  return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), body: Buffer.from(await res.arrayBuffer()) };
}

const filesOf = (reportId: string) => {
  try {
    return readdirSync(join(dir, accountId)).filter((n) => n.startsWith(reportId));
  } catch {
    return [];
  }
};

describe('report generation', () => {
  beforeAll(async () => {
    const fx = new Fixtures(platform, accountId);
    customers = [await fx.customer('2025-01-01T00:00:00Z', 'Ada "Countess" Lovelace'), await fx.customer('2025-01-02T00:00:00Z', 'Grace, Hopper')];
    const store = await fx.store();
    // 60 orders in March (3 a day for 20 days): enough for a table that spans PDF pages.
    for (let d = 1; d <= 20; d++) {
      for (let i = 0; i < 3; i++) {
        await fx.order(store, customers[i % 2]!, 1000 + d * 10 + i, 'USD', `2025-03-${String(d).padStart(2, '0')}T1${i}:00:00Z`, { units: i + 1 });
      }
    }
    const p = await fx.payment(5000, 'USD', '2025-03-10T12:00:00Z', { customerId: customers[0] });
    await fx.refund(p, 1250, 'USD', '2025-03-11T12:00:00Z');
    await fx.payment(2000, 'EUR', '2025-03-12T12:00:00Z', { customerId: customers[1] });
  });

  it('renders a CSV (RFC 4180, UTF-8) through report-<id>, with progress, Location, a signed download_url and report.ready', async () => {
    const res = await generate({ report_type: 'sales', format: 'csv', timezone: 'Europe/Berlin' });
    const id: string = res.body.id;
    expect(id).toMatch(/^rpt_/);
    expect(res.body).toMatchObject({ object: 'report', status: 'queued', progress: 0, workflow_id: `report-${id}`, date_range: RANGE, download_url: null });
    expect(res.headers.get('location')).toBe(`/v3/analytics/reports/${id}`);
    const done = await waitFor(id, finished);
    expect(done).toMatchObject({ status: 'succeeded', progress: 100, row_count: 60, file: { name: `${id}.csv`, content_type: 'text/csv; charset=utf-8' } });
    expect(done.download_url).toMatch(new RegExp(`^/files/reports/${id}\\?expires=\\d+&signature=`));
    expect(Date.parse(done.expires_at) - Date.parse(done.completed_at)).toBe(3 * 86_400_000);

    // The signed link needs no API key: its signature is the credential.
    const file = await download(done.download_url, null);
    expect(file.status).toBe(200);
    expect(file.type).toBe('text/csv; charset=utf-8');
    expect(file.disposition).toBe(`attachment; filename="${id}.csv"`);
    const text = file.body.toString('utf8');
    expect(text.split('\r\n')[0]).toBe('Date,Order,Store,Customer,Status,Units,Currency,Total');
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(60);
    expect(rows[0]).toMatchObject({ Date: '2025-03-01', Units: '1', Currency: 'USD', Total: '10.10' });
    expect(rows.reduce((s, r) => s + Number(r.Units), 0)).toBe(120);
    expect(filesOf(id)).toEqual([`${id}.csv`]);

    const tampered = await http(done.download_url.replace(/signature=(.)/, (_: string, c: string) => `signature=${c === 'x' ? 'y' : 'x'}`));
    expect([tampered.status, tampered.body.code, tampered.headers.get('content-type')]).toEqual([403, 'download_url_invalid', 'application/problem+json; charset=utf-8']);
    const query = done.download_url.slice(done.download_url.indexOf('?'));
    // The signature binds the report, the account and mode, and the expiry.
    const otherReport = await http(`/files/reports/rpt_00000000000000000000000000${query}`);
    expect([otherReport.status, otherReport.body.code]).toEqual([403, 'download_url_invalid']);
    const longer = await http(done.download_url.replace(/expires=(\d+)/, (_: string, e: string) => `expires=${Number(e) + 3600}`));
    expect([longer.status, longer.body.code]).toEqual([403, 'download_url_invalid']);
    const signer = await downloadSigner(platform.orm, { ANALYTICS_DOWNLOAD_URL_TTL_SECONDS: 3600 });
    const liveLink = signer.sign({ accountId, livemode: true }, id, new Date(), null).url;
    expect((await http(liveLink)).body.code).toBe('download_url_invalid');
    const otherAccount = signer.sign({ accountId: await platform.newAccount(), livemode: false }, id, new Date(), null).url;
    expect((await http(otherAccount)).body.code).toBe('download_url_invalid');
    const expiredLink = signer.sign({ accountId, livemode: false }, id, new Date(Date.now() - 3 * 3600_000), null).url;
    const expired = await http(expiredLink);
    expect([expired.status, expired.body.code]).toEqual([403, 'download_url_expired']);
    const unsigned = await http(`/files/reports/${id}`);
    expect([unsigned.status, unsigned.body.code, unsigned.headers.get('content-type')]).toEqual([401, 'download_url_unsigned', 'application/problem+json; charset=utf-8']);
    expect((await download(`/files/reports/${id}?expires=abc&signature=x`, null)).status).toBe(403);
    // The /v3 route still serves the file with an API key (and refuses a bad signature there too).
    expect((await download(`/v3/analytics/reports/${id}/download`)).status).toBe(200);
    expect((await http(`/v3/analytics/reports/${id}/download?expires=1&signature=abc`, { key })).status).toBe(403);
    const [event] = await platform.sql<{ type: string; status: string }>(
      `select type, data->'object'->>'status' as status from events where data->'object'->>'id' = $1`, [id]);
    expect(event).toEqual({ type: 'report.ready', status: 'succeeded' });

    // The row is published before the workflow's last step sets its status attribute: wait for the end.
    const handle = platform.temporal.client.workflow.getHandle(`report-${id}`);
    await handle.result();
    const wf = await handle.describe();
    expect(wf.typedSearchAttributes.getAll().map((p) => `${p.key.name}=${String(p.value)}`)).toEqual(expect.arrayContaining([
      `BpAccountId=${accountId}`, 'BpMode=test', `BpResourceId=${id}`, 'BpStatus=succeeded',
    ]));
  });

  it('renders a PDF with title, parameters, totals, a chart and a table across pages', async () => {
    const { body } = await generate({ report_type: 'sales', format: 'pdf', currency: 'USD', filters: { customer_id: customers[0] } });
    const done = await waitFor(body.id, finished);
    expect(done).toMatchObject({ status: 'succeeded', row_count: 40 });
    const file = await download(`/v3/analytics/reports/${body.id}/download`);
    expect([file.status, file.type]).toEqual([200, 'application/pdf']);
    const { totalPages, text } = await extractText(new Uint8Array(file.body), { mergePages: true });
    expect(totalPages).toBeGreaterThanOrEqual(2);
    expect(text).toContain('Sales report');
    expect(text).toContain(`Filter customer_id: ${customers[0]}`);
    expect(text).toContain('Orders: 40');
    expect(text).toContain('Per day (USD)');
    expect(text).toContain('Gross sales: ');
    expect(text.match(/ord_fx/g)?.length).toBe(40);
  });

  it('renders Excel with a sheet per section, typed cells and a frozen header; JSON with the same data', async () => {
    const excel = await generate({ report_type: 'financial', format: 'excel' });
    const json = await generate({ report_type: 'financial', format: 'json' });
    const [x, j] = await Promise.all([waitFor(excel.body.id, finished), waitFor(json.body.id, finished)]);
    expect([x.status, j.status, x.row_count, j.row_count]).toEqual(['succeeded', 'succeeded', 3, 3]);

    const xfile = await download(`/v3/analytics/reports/${x.id}/download`);
    expect(xfile.type).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.load(xfile.body as unknown as ArrayBuffer);
    expect(wb.worksheets.map((s) => s.name)).toEqual(['Summary', 'Transactions']);
    const sheet = wb.getWorksheet('Transactions')!;
    expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(sheet.getRow(1).values).toEqual([undefined, 'Date', 'Kind', 'Id', 'Stream', 'Customer', 'Currency', 'Amount']);
    expect(sheet.rowCount).toBe(4);
    const refund = sheet.getRow(3);
    expect(refund.getCell(1).value).toBeInstanceOf(Date);
    expect([refund.getCell(2).value, refund.getCell(7).value, typeof refund.getCell(7).value]).toEqual(['refund', -12.5, 'number']);
    const summary = wb.getWorksheet('Summary')!;
    const labels = summary.getColumn(1).values.filter(Boolean);
    expect(labels).toEqual(expect.arrayContaining(['Net revenue', 'Refunds', 'Transactions']));

    const jfile = await download(`/v3/analytics/reports/${j.id}/download`);
    expect(jfile.type).toBe('application/json; charset=utf-8');
    const doc = JSON.parse(jfile.body.toString('utf8'));
    expect(doc).toMatchObject({ object: 'report_data', title: 'Financial report', parameters: { Report: 'financial', From: '2025-03-01' } });
    expect(doc.rows.map((r: any) => [r.kind, r.currency, r.amount])).toEqual([['payment', 'USD', '50.00'], ['refund', 'USD', '-12.50'], ['payment', 'EUR', '20.00']]);
    expect(doc.totals).toEqual(expect.arrayContaining([{ label: 'Net revenue', value: '37.50', currency: 'USD' }, { label: 'Transactions', value: 3, currency: null }]));
  });

  it('renders the customer and inventory reports, quoting commas and quotes in CSV', async () => {
    const c = await generate({ report_type: 'customer', format: 'csv' });
    const i = await generate({ report_type: 'inventory', format: 'json' });
    const [cr, ir] = await Promise.all([waitFor(c.body.id, finished), waitFor(i.body.id, finished)]);
    expect([cr.status, ir.status, ir.row_count]).toEqual(['succeeded', 'succeeded', 0]);
    const text = (await download(`/v3/analytics/reports/${cr.id}/download`)).body.toString('utf8');
    expect(text).toContain('"Ada ""Countess"" Lovelace"');
    expect(text).toContain('"Grace, Hopper"');
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => [r.Name, r.Currency, r.Revenue])).toEqual([['Ada "Countess" Lovelace', 'USD', '37.50'], ['Grace, Hopper', 'EUR', '20.00']]);
  });

  it('cancels mid-way (sandbox hold_at_half): canceled, no file left, and a second cancel is refused', async () => {
    const { body } = await generate({ report_type: 'sales', format: 'pdf', filters: { sandbox_scenario: 'hold_at_half' } });
    const held = await waitFor(body.id, (r) => r.status === 'running' && r.progress === 50);
    expect(held.started_at).not.toBeNull();
    const live = await adminCaller(platform).analytics.describeReport({ accountId, livemode: false, reportId: body.id });
    expect(live.workflow.live).toMatchObject({ phase: 'rendering', status: 'running', cancelRequested: false });

    const cancel = await http(`/v3/analytics/reports/${body.id}/cancel`, { key, body: { reason: 'wrong month' } });
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body).toMatchObject({ status: 'canceled', file: null, download_url: null });
    expect(filesOf(body.id)).toEqual([]);
    const again = await http(`/v3/analytics/reports/${body.id}/cancel`, { key, body: {} });
    expect([again.status, again.body.code, again.body.current_state]).toEqual([409, 'invalid_state_transition', 'canceled']);
    const notReady = await http(`/v3/analytics/reports/${body.id}/download`, { key });
    expect([notReady.status, notReady.body.code, notReady.body.current_state]).toEqual([409, 'report_not_ready', 'canceled']);

    // Admin re-run: the same workflow id, run 2, recorded with its operator and reason.
    const admin = adminCaller(platform);
    await platform.sql(`update analytics_reports set filters = '{}' where id = $1`, [body.id]);
    const rerun = await admin.analytics.rerunReport({ accountId, livemode: false, reportId: body.id, operator: 'ops@example.com', reason: 'customer asked again' });
    expect(rerun.run).toBe(2);
    const done = await waitFor(body.id, (r) => r.status === 'succeeded');
    expect(done.row_count).toBe(60);
    expect(filesOf(body.id)).toEqual([`${body.id}.pdf`]);
    expect((await admin.analytics.actions({ target: body.id }))[0]).toMatchObject({ operator: 'ops@example.com', reason: 'customer asked again', action: 'rerun_report' });
    const found = await admin.analytics.findReports({ accountId, reportId: body.id });
    expect(found.length).toBeGreaterThanOrEqual(1);
    expect(new Set(found.map((f) => f.report_id))).toEqual(new Set([body.id]));
  });

  it('fails a report whose render fails for good, with report.failed', async () => {
    const { body } = await generate({ report_type: 'financial', format: 'csv', filters: { sandbox_scenario: 'render_failure' } });
    const done = await waitFor(body.id, finished);
    expect(done).toMatchObject({ status: 'failed', failure: { code: 'render_failed' }, file: null });
    expect(done.failure.message).toMatch(/render_failure/);
    const [event] = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1`, [body.id]);
    expect(event?.type).toBe('report.failed');
  });

  it('deletes files after retention (maintenance workflow): download answers 410', async () => {
    const { body } = await generate({ report_type: 'sales', format: 'json' });
    await waitFor(body.id, (r) => r.status === 'succeeded');
    await platform.sql(`update analytics_reports set expires_at = now() - interval '1 minute' where id = $1`, [body.id]);
    const result = await platform.temporal.client.workflow.execute('analyticsMaintenanceWorkflow', {
      workflowId: `analytics-maintenance-test-${body.id}`, taskQueue: platform.temporal.taskQueue('analytics'),
      args: [{ refreshRollups: true, purgeReports: true }],
    });
    expect(result).toMatchObject({ reportFilesDeleted: 1 });
    expect((result as { rollupsRefreshed: number }).rollupsRefreshed).toBeGreaterThanOrEqual(1);
    expect(filesOf(body.id)).toEqual([]);
    const gone = await http(`/v3/analytics/reports/${body.id}/download`, { key });
    expect([gone.status, gone.body.code]).toEqual([410, 'report_expired']);
    const view = await http(`/v3/analytics/reports/${body.id}`, { key });
    expect(view.body).toMatchObject({ status: 'succeeded', file: null, download_url: null });
  });

  it('lists reports newest first with filters and cursors', async () => {
    const all = await http('/v3/analytics/reports?limit=100', { key });
    expect(all.body.data.length).toBeGreaterThanOrEqual(8);
    const ids = all.body.data.map((r: { id: string }) => r.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const failed = await http('/v3/analytics/reports?status=failed,canceled', { key });
    expect(failed.body.data.map((r: { status: string }) => r.status)).toEqual(['failed']);
    const page1 = await http('/v3/analytics/reports?limit=2&report_type=sales', { key });
    expect(page1.body.has_more).toBe(true);
    const page2 = await http(`/v3/analytics/reports?limit=2&report_type=sales&cursor=${page1.body.next_cursor}`, { key });
    expect(page2.body.data[0].id < page1.body.data[1].id).toBe(true);
  });

  it('refuses bad input naming each field, replays an Idempotency-Key, and hides other accounts\' reports', async () => {
    const bad = await http('/v3/analytics/reports/generate', {
      key, body: { report_type: 'weekly', date_range: { start: '2025-03-31', end: '2025-03-01' }, format: 'docx', timezone: 'Nowhere/City', filters: { colour: 'red' } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['filters.colour', 'format', 'report_type', 'timezone']);
    const reversed = await http('/v3/analytics/reports/generate', { key, body: { report_type: 'sales', format: 'csv', date_range: { start: '2025-03-31', end: '2025-03-01' } } });
    expect([reversed.status, reversed.body.errors[0].path]).toEqual([422, 'date_range.end']);
    const long = await http('/v3/analytics/reports/generate', { key, body: { report_type: 'sales', format: 'csv', date_range: { start: '2015-01-01', end: '2025-03-01' } } });
    expect([long.status, long.body.errors[0].path]).toEqual([422, 'date_range.end']);
    const dmy = await http('/v3/analytics/reports/generate', { key, body: { report_type: 'sales', format: 'csv', date_range: { start: '01/03/2025', end: '2025-03-01' } } });
    expect(dmy.body.errors[0]).toMatchObject({ path: 'date_range.start', message: expect.stringContaining('2025-03-01') });
    const nul = await http('/v3/analytics/reports/generate', { key, body: { report_type: 'sales', format: 'csv', date_range: RANGE, filters: { customer_id: 'cus\u0000x' } } });
    expect([nul.status, nul.body.errors[0].path]).toEqual([422, 'filters.customer_id']);
    const liveKey = await platform.newKey({ accountId, type: 'live' });
    const liveScenario = await http('/v3/analytics/reports/generate', { key: liveKey, body: { report_type: 'sales', format: 'csv', date_range: RANGE, filters: { sandbox_scenario: 'hold_at_half' } } });
    expect([liveScenario.status, liveScenario.body.errors[0].path]).toEqual([422, 'filters.sandbox_scenario']);

    const headers = { 'Idempotency-Key': `rpt-${Date.now()}` };
    const first = await generate({ report_type: 'inventory', format: 'csv' }, headers);
    const second = await generate({ report_type: 'inventory', format: 'csv' }, headers);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');

    const other = await platform.newKey({ accountId: await platform.newAccount() });
    for (const path of [`/v3/analytics/reports/${first.body.id}`, `/v3/analytics/reports/${first.body.id}/download`]) {
      const res = await http(path, { key: other });
      expect([res.status, res.body.code], path).toEqual([404, 'not_found']);
    }
    const cancel = await http(`/v3/analytics/reports/${first.body.id}/cancel`, { key: other, body: {} });
    expect(cancel.status).toBe(404);
  });
});
