import { createHmac, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { WorkflowIdReusePolicy, WorkflowUpdateFailedError } from '@temporalio/client';
import { installationSecret } from '../../db/installation-settings.ts';
import { nativePool } from '../../db/pool.ts';
import type { Config } from '../../platform/config.ts';
import { ApiError, conflict, notFound, serviceUnavailable, validationFailed } from '../../platform/errors.ts';
import { failureToProblem, searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { REFUSALS } from '../../workflows/kit/failures.ts';
import type { reportWorkflow } from '../../workflows/analytics/report.ts';
import {
  cancelReportUpdate, reportRecordedUpdate, reportStateQuery, reportWorkflowId,
  type RenderedFile, type ReportLiveState, type ReportRef, type ReportWorkflowInput,
} from '../../workflows/analytics/shared.ts';
import { recordEvent } from '../events/outbox.ts';
import { scopeColumns, scopedEm, type Scope } from '../scope.ts';
import { AnalyticsReport } from './entities.ts';
import { FORMAT_FILES } from './render.ts';
import { S3Store } from './s3.ts';
import { addDays, daysBetween } from './periods.ts';
import type { ReportFilters, ReportFormat, ReportStatus, ReportType, ReportView } from './schemas.ts';

/**
 * Reports: one workflow per report (`report-rpt_…`), started with update-with-start so the API
 * answers 202 only once the row exists; the workflow's activities write every later state. Files
 * live under ANALYTICS_REPORTS_DIR/<account>/<report>.<ext>; `download_url` is signed (HMAC of
 * report, scope and expiry with a per-installation key) and expires.
 */

export const MAX_REPORT_DAYS = 5 * 366;

export interface ReportsContext {
  em: EntityManager;
  temporal: TemporalHandle;
  signer: DownloadSigner;
}

// ---- Signed download URLs ----------------------------------------------------------------------

/**
 * Where `download_url` points: outside /v3 (mounted through the area's `pages` hook), so the link
 * works without an API key; its signature is the credential. It binds report, account, mode and
 * expiry, so the link opens that report's file only, and only until it expires.
 */
export const SIGNED_DOWNLOAD_PREFIX = '/files/reports/';

export interface DownloadSigner {
  /** The signed path and its expiry, valid at least `ttlSeconds` from `now` (never past the file's own expiry). */
  sign(scope: Scope, reportId: string, now: Date, fileExpiresAt: Date | null): { url: string; expiresAt: Date };
  verify(scope: Scope, reportId: string, expires: number, signature: string, now: Date): 'valid' | 'expired' | 'invalid';
}

export async function createDownloadSigner(orm: MikroORM, ttlSeconds: number): Promise<DownloadSigner> {
  const key = await installationSecret(await nativePool(orm), 'analytics_download_key');
  const mac = (scope: Scope, reportId: string, expires: number) =>
    createHmac('sha256', key).update(`${reportId}.${scope.accountId}.${scope.livemode ? 'live' : 'test'}.${expires}`).digest('base64url');
  return {
    sign(scope, reportId, now, fileExpiresAt) {
      // Aligned to the TTL (valid for at least one TTL, at most two): the URL stays the same
      // between reads in one window, so a report read twice reads the same.
      let expires = (Math.floor(now.getTime() / 1000 / ttlSeconds) + 2) * ttlSeconds;
      if (fileExpiresAt) expires = Math.min(expires, Math.floor(fileExpiresAt.getTime() / 1000));
      return {
        url: `${SIGNED_DOWNLOAD_PREFIX}${reportId}?expires=${expires}&signature=${mac(scope, reportId, expires)}`,
        expiresAt: new Date(expires * 1000),
      };
    },
    verify(scope, reportId, expires, signature, now) {
      const expected = Buffer.from(mac(scope, reportId, expires));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
      return expires * 1000 < now.getTime() ? 'expired' : 'valid';
    },
  };
}

/** Signers by ORM (one key per installation, read once per process). */
const signers = new WeakMap<MikroORM, Promise<DownloadSigner>>();
export function downloadSigner(orm: MikroORM, config: Pick<Config, 'ANALYTICS_DOWNLOAD_URL_TTL_SECONDS'>): Promise<DownloadSigner> {
  let s = signers.get(orm);
  if (!s) {
    s = createDownloadSigner(orm, config.ANALYTICS_DOWNLOAD_URL_TTL_SECONDS);
    signers.set(orm, s);
    s.catch(() => signers.delete(orm));
  }
  return s;
}

// ---- Files -----------------------------------------------------------------------------------------

export function reportsDir(config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>): string {
  return isAbsolute(config.ANALYTICS_REPORTS_DIR) ? config.ANALYTICS_REPORTS_DIR : resolve(process.cwd(), config.ANALYTICS_REPORTS_DIR);
}

export function accountDir(config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, accountId: string): string {
  return join(reportsDir(config), accountId);
}

/** A fresh part file for this attempt; every older part of the report is removed first. */
export async function preparePartFile(config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, accountId: string, reportId: string, attempt: number): Promise<string> {
  const dir = accountDir(config, accountId);
  await mkdir(dir, { recursive: true });
  await removeParts(dir, reportId);
  return join(dir, `${reportId}.${attempt}.part`);
}

/** The file names in `dir`; none when it does not exist. */
async function namesIn(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

async function removeParts(dir: string, reportId: string): Promise<void> {
  const names = await namesIn(dir);
  await Promise.all(names.filter((n) => n.startsWith(`${reportId}.`) && n.endsWith('.part')).map((n) => rm(join(dir, n), { force: true })));
}

/** Where report files are kept: the directory (always, for part files), and an S3-compatible store when configured. */
export type StorageConfig = Pick<Config, 'ANALYTICS_REPORTS_DIR' | 'ANALYTICS_S3_ENDPOINT' | 'ANALYTICS_S3_BUCKET' | 'ANALYTICS_S3_REGION'
  | 'ANALYTICS_S3_ACCESS_KEY_ID' | 'ANALYTICS_S3_SECRET_ACCESS_KEY'>;

const stores = new Map<string, S3Store>();

/** The S3-compatible store of this configuration; null: files stay in ANALYTICS_REPORTS_DIR. */
export function s3Store(config: Partial<StorageConfig>): S3Store | null {
  const { ANALYTICS_S3_ENDPOINT: endpoint, ANALYTICS_S3_BUCKET: bucket, ANALYTICS_S3_ACCESS_KEY_ID: accessKeyId, ANALYTICS_S3_SECRET_ACCESS_KEY: secretAccessKey } = config;
  if (!endpoint || !bucket || !accessKeyId || !secretAccessKey) return null;
  const region = config.ANALYTICS_S3_REGION ?? 'us-east-1';
  const key = [endpoint, bucket, region, accessKeyId].join('|');
  let store = stores.get(key);
  if (!store) stores.set(key, (store = new S3Store({ endpoint, bucket, region, accessKeyId, secretAccessKey })));
  return store;
}

const objectKey = (accountId: string, fileName: string) => `${accountId}/${fileName}`;

/**
 * Moves the finished part file to its final name (atomic on one file system): one file per report.
 * With an S3-compatible store, the file is then uploaded as `<account>/<file>` and the local copy
 * removed (a retry uploads again: a PUT replaces the object, so there is still one file).
 */
export async function publishFile(partPath: string, config: Partial<StorageConfig> & Pick<Config, 'ANALYTICS_REPORTS_DIR'>, accountId: string, fileName: string, contentType = 'application/octet-stream'): Promise<number> {
  const target = join(accountDir(config, accountId), fileName);
  await rename(partPath, target);
  const store = s3Store(config);
  if (!store) return (await stat(target)).size;
  const size = await store.putFile(objectKey(accountId, fileName), target, contentType);
  await rm(target, { force: true });
  return size;
}

export async function removeReportFiles(config: Partial<StorageConfig> & Pick<Config, 'ANALYTICS_REPORTS_DIR'>, accountId: string, reportId: string): Promise<void> {
  const dir = accountDir(config, accountId);
  const names = await namesIn(dir);
  await Promise.all(names.filter((n) => n.startsWith(`${reportId}.`)).map((n) => rm(join(dir, n), { force: true })));
  const store = s3Store(config);
  if (store) await Promise.all(Object.values(FORMAT_FILES).map((f) => store.delete(objectKey(accountId, `${reportId}.${f.extension}`))));
}

/** The stored file as a stream; null when it is no longer stored. A store that cannot answer is 503. */
export async function openReportFile(config: Partial<StorageConfig> & Pick<Config, 'ANALYTICS_REPORTS_DIR'>, file: ReportFile): Promise<{ stream: Readable; size: number } | null> {
  const store = s3Store(config);
  if (!store) {
    const stream = createReadStream(file.path);
    return new Promise((resolve) => {
      stream.once('open', () => resolve({ stream, size: file.size }));
      stream.once('error', () => resolve(null));
    });
  }
  try {
    return await store.get(objectKey(file.accountId, file.fileName));
  } catch {
    // Its reason (the store's answer) is not shown: it may name the bucket or the endpoint.
    throw serviceUnavailable('The report file store');
  }
}

// ---- Views -------------------------------------------------------------------------------------------

export function toReportView(r: AnalyticsReport, signer: DownloadSigner | null, now: Date): ReportView {
  const available = r.status === 'succeeded' && r.fileName !== null && r.fileDeletedAt === null && (!r.expiresAt || r.expiresAt > now);
  const link = available && signer ? signer.sign(r, r.id, now, r.expiresAt ?? null) : null;
  return {
    id: r.id, object: 'report', livemode: r.livemode, report_type: r.reportType, format: r.format, status: r.status,
    progress: r.progress, date_range: { start: r.dateStart, end: r.dateEnd }, timezone: r.timezone, currency: r.currency ?? null,
    filters: r.filters,
    row_count: r.rowCount ?? null,
    file: r.fileName && r.fileDeletedAt === null ? { name: r.fileName, size: r.fileSize ?? 0, content_type: r.contentType ?? 'application/octet-stream' } : null,
    download_url: link?.url ?? null,
    download_url_expires_at: link?.expiresAt.toISOString() ?? null,
    expires_at: r.expiresAt?.toISOString() ?? null,
    failure: r.failureCode ? { code: r.failureCode, message: r.failureMessage ?? '' } : null,
    workflow_id: r.workflowId,
    created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(),
    started_at: r.startedAt?.toISOString() ?? null, completed_at: r.completedAt?.toISOString() ?? null,
  };
}

// ---- API side ----------------------------------------------------------------------------------------

export interface GenerateReportInput {
  reportId: string;
  reportType: ReportType;
  format: ReportFormat;
  start: string;
  end: string;
  timezone: string;
  currency: string | null;
  filters: ReportFilters;
  requestIdempotencyKey: string | null;
  requestId: string | null;
}

export function checkReportInput(scope: Scope, input: Pick<GenerateReportInput, 'start' | 'end' | 'filters'>): void {
  const errors = [];
  if (input.start > input.end) errors.push({ path: 'date_range.end', message: 'end must not be before start' });
  else if (daysBetween(input.start, input.end) + 1 > MAX_REPORT_DAYS) {
    errors.push({ path: 'date_range.end', message: `a report spans at most 5 years (${MAX_REPORT_DAYS} days); end at ${addDays(input.start, MAX_REPORT_DAYS - 1)} or earlier` });
  }
  if (input.filters.sandbox_scenario && scope.livemode) {
    errors.push({ path: 'filters.sandbox_scenario', message: 'sandbox scenarios exist in test mode only; remove it or use a test key' });
  }
  if (errors.length) throw validationFailed(errors);
}

export async function generateReport(ctx: ReportsContext, scope: Scope, input: GenerateReportInput): Promise<ReportView> {
  checkReportInput(scope, input);
  const wfInput: ReportWorkflowInput = { ...input, accountId: scope.accountId, livemode: scope.livemode, run: 1 };
  try {
    return await startResource<typeof reportWorkflow, ReportView, []>(ctx.temporal, {
      workflowType: 'reportWorkflow',
      workflowId: reportWorkflowId(input.reportId),
      taskQueue: ctx.temporal.taskQueue('analytics'),
      args: [wfInput],
      searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: input.filters.customer_id ?? null, resourceId: input.reportId, status: 'queued' }),
      update: reportRecordedUpdate,
      updateArgs: [],
      resultAnswersUpdate: true,
    });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      const existing = await getReport(ctx, input.reportId).catch(() => null);
      if (existing) return existing;
    }
    throw (await failureToProblem(err, {
      resource: `Report ${input.reportId}`,
      suggestion: 'Retry with the same Idempotency-Key to get the report that was recorded.',
      currentState: async () => 'queued',
    })) ?? err;
  }
}

export async function getReport(ctx: Pick<ReportsContext, 'em' | 'signer'>, reportId: string, now = new Date()): Promise<ReportView> {
  const r = await ctx.em.fork().findOne(AnalyticsReport, { id: reportId });
  if (!r) throw notFound('report', reportId);
  return toReportView(r, ctx.signer, now);
}

export async function listReports(
  ctx: Pick<ReportsContext, 'em' | 'signer'>, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
  filters: { status?: ReportStatus[] | undefined; report_type?: ReportType[] | undefined },
): Promise<ReportView[]> {
  const where: Record<string, unknown> = { ...page.where };
  if (filters.status) where.status = { $in: filters.status };
  if (filters.report_type) where.reportType = { $in: filters.report_type };
  const rows = await ctx.em.find(AnalyticsReport, where, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  const now = new Date();
  return rows.map((r) => toReportView(r, ctx.signer, now));
}

export async function cancelReport(ctx: ReportsContext, reportId: string, reason: string | null, requestId: string | null): Promise<ReportView> {
  const current = await getReport(ctx, reportId);
  if (current.status !== 'queued' && current.status !== 'running') {
    throw conflict(REFUSALS.invalidTransition, `Report ${reportId} is ${current.status}; only a queued or running report can be canceled.`,
      'Generate a new report instead.', { current_state: current.status });
  }
  await sendUpdate(
    () => ctx.temporal.client.workflow.getHandle(current.workflow_id).executeUpdate(cancelReportUpdate, { args: [{ reason, requestId }] }),
    {
      resource: `Report ${reportId}`, suggestion: 'Generate a new report instead.',
      currentState: async () => (await getReport(ctx, reportId)).status,
    },
  );
  return getReport(ctx, reportId);
}

export interface ReportFile {
  path: string;
  name: string;
  contentType: string;
  size: number;
  /** Where the file is stored (its key within the store). */
  accountId: string;
  fileName: string;
}

function refuseSignature(verdict: 'expired' | 'invalid'): ApiError {
  return new ApiError({
    status: 403, code: verdict === 'expired' ? 'download_url_expired' : 'download_url_invalid', title: 'Forbidden',
    detail: verdict === 'expired' ? 'This download URL has expired.' : 'This download URL is not valid for this report.',
    suggestion: 'Get a fresh download_url from GET /v3/analytics/reports/{id}.',
  });
}

/** The report's file for download with an API key: checks state, retention and (when given) the URL's signature. */
export async function reportFileFor(
  ctx: Pick<ReportsContext, 'em' | 'signer'>, config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, scope: Scope, reportId: string,
  signed: { expires?: number | undefined; signature?: string | undefined }, now = new Date(),
): Promise<ReportFile> {
  const r = await ctx.em.fork().findOne(AnalyticsReport, { id: reportId });
  if (!r) throw notFound('report', reportId);
  if (signed.expires !== undefined || signed.signature !== undefined) {
    const verdict = signed.expires === undefined || signed.signature === undefined
      ? 'invalid'
      : ctx.signer.verify(scope, reportId, signed.expires, signed.signature, now);
    if (verdict !== 'valid') throw refuseSignature(verdict);
  }
  return fileOf(config, r, now);
}

/**
 * The report's file for the key-less signed link: the signature is the only credential, checked
 * against the report's own account and mode. A link without one is 401; a wrong one (or one
 * naming no report: nothing is told about ids) 403; an expired one 403 `download_url_expired`.
 */
export async function signedReportFile(
  em: EntityManager, signer: DownloadSigner, config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, reportId: string,
  signed: { expires: string | undefined; signature: string | undefined }, now = new Date(),
): Promise<ReportFile> {
  if (!signed.expires || !signed.signature) {
    throw new ApiError({
      status: 401, code: 'download_url_unsigned', title: 'Unauthorized',
      detail: 'This link carries no signature: without an API key, a report downloads only through its signed download_url.',
      suggestion: 'Use the download_url of GET /v3/analytics/reports/{id} unchanged, or GET /v3/analytics/reports/{id}/download with an API key.',
    });
  }
  if (!/^\d{1,12}$/.test(signed.expires) || signed.signature.length > 200 || reportId.length > 64) throw refuseSignature('invalid');
  const r = await em.fork().findOne(AnalyticsReport, { id: reportId }, { filters: false });
  if (!r) throw refuseSignature('invalid');
  const verdict = signer.verify(r, reportId, Number(signed.expires), signed.signature, now);
  if (verdict !== 'valid') throw refuseSignature(verdict);
  return fileOf(config, r, now);
}

function fileOf(config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, r: AnalyticsReport, now: Date): ReportFile {
  const reportId = r.id;
  if (r.status !== 'succeeded' || !r.fileName) {
    throw conflict('report_not_ready', `Report ${reportId} is ${r.status}; only a succeeded report has a file.`,
      r.status === 'queued' || r.status === 'running' ? 'Poll GET /v3/analytics/reports/{id} until status is succeeded.' : 'Generate the report again.',
      { current_state: r.status });
  }
  if (r.fileDeletedAt || (r.expiresAt && r.expiresAt <= now)) {
    throw new ApiError({
      status: 410, code: 'report_expired', title: 'Gone',
      detail: `Report ${reportId}'s file was deleted at the end of its retention period.`,
      suggestion: 'Generate the report again with POST /v3/analytics/reports/generate.',
    });
  }
  return {
    path: join(accountDir(config, r.accountId), r.fileName), name: r.fileName, contentType: r.contentType ?? 'application/octet-stream', size: r.fileSize ?? 0,
    accountId: r.accountId, fileName: r.fileName,
  };
}

// ---- Admin -------------------------------------------------------------------------------------------

export async function describeReportWorkflow(temporal: TemporalHandle, reportId: string): Promise<{ workflow_id: string; run_status: string; live: ReportLiveState | null }> {
  const handle = temporal.client.workflow.getHandle(reportWorkflowId(reportId));
  const d = await handle.describe();
  const live = await handle.query(reportStateQuery).catch(() => null);
  return { workflow_id: d.workflowId, run_status: d.status.name, live };
}

/** Runs a finished (failed, canceled or succeeded) report again under the same workflow id, replacing its file. */
export async function rerunReport(em: EntityManager, temporal: TemporalHandle, scope: Scope, reportId: string): Promise<{ run: number }> {
  const r = await em.fork().findOne(AnalyticsReport, { id: reportId });
  if (!r) throw notFound('report', reportId);
  if (r.status === 'queued' || r.status === 'running') {
    throw conflict(REFUSALS.invalidTransition, `Report ${reportId} is ${r.status}.`, 'Cancel it first, or wait for it to finish.', { current_state: r.status });
  }
  const run = r.runs + 1;
  const input: ReportWorkflowInput = {
    reportId, accountId: scope.accountId, livemode: scope.livemode, reportType: r.reportType, format: r.format,
    start: r.dateStart, end: r.dateEnd, timezone: r.timezone, currency: r.currency ?? null, filters: r.filters,
    requestIdempotencyKey: null, requestId: null, run,
  };
  await temporal.client.workflow.start('reportWorkflow', {
    workflowId: reportWorkflowId(reportId), taskQueue: temporal.taskQueue('analytics'), args: [input],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    typedSearchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, customerId: r.filters.customer_id ?? null, resourceId: reportId, status: 'queued' }),
  });
  return { run };
}

// ---- Activity side -------------------------------------------------------------------------------------

export async function recordReport(orm: MikroORM, input: ReportWorkflowInput): Promise<ReportView> {
  const scope = { accountId: input.accountId, livemode: input.livemode };
  const em = scopedEm(orm, scope);
  let r = await em.findOne(AnalyticsReport, { id: input.reportId });
  if (!r) {
    r = em.create(AnalyticsReport, {
      id: input.reportId, ...scopeColumns(scope), reportType: input.reportType, format: input.format, status: 'queued', progress: 0,
      dateStart: input.start, dateEnd: input.end, timezone: input.timezone, currency: input.currency, filters: input.filters,
      runs: input.run, workflowId: reportWorkflowId(input.reportId), requestIdempotencyKey: input.requestIdempotencyKey,
      rowCount: null, fileName: null, fileSize: null, contentType: null, fileDeletedAt: null, expiresAt: null,
      failureCode: null, failureMessage: null, startedAt: null, completedAt: null,
    });
    await em.flush();
  } else if (input.run > r.runs) {
    Object.assign(r, {
      runs: input.run, status: 'queued', progress: 0, rowCount: null, failureCode: null, failureMessage: null,
      startedAt: null, completedAt: null, updatedAt: new Date(),
    });
    await em.flush();
  }
  return toReportView(r, null, new Date());
}

async function updateReport(
  orm: MikroORM, ref: ReportRef, change: (r: AnalyticsReport, em: EntityManager) => void, signer: DownloadSigner | null,
): Promise<ReportView> {
  const scope = { accountId: ref.accountId, livemode: ref.livemode };
  const em = scopedEm(orm, scope);
  return em.transactional(async (tx) => {
    const r = await tx.findOneOrFail(AnalyticsReport, { id: ref.reportId });
    change(r, tx);
    r.updatedAt = new Date();
    await tx.flush();
    return toReportView(r, signer, new Date());
  });
}

export function markReportRunning(orm: MikroORM, ref: ReportRef): Promise<ReportView> {
  return updateReport(orm, ref, (r) => {
    if (r.status === 'queued') {
      r.status = 'running';
      r.startedAt = new Date();
    }
  }, null);
}

export async function recordProgress(orm: MikroORM, ref: ReportRef, progress: number): Promise<void> {
  await scopedEm(orm, ref).nativeUpdate(AnalyticsReport, { id: ref.reportId, status: 'running' }, { progress, updatedAt: new Date() });
}

export function completeReport(
  orm: MikroORM, config: Pick<Config, 'ANALYTICS_REPORT_RETENTION_DAYS'>, signer: DownloadSigner, ref: ReportRef & { file: RenderedFile },
): Promise<ReportView> {
  return updateReport(orm, ref, (r, tx) => {
    if (r.status === 'succeeded') return;
    const now = new Date();
    Object.assign(r, {
      status: 'succeeded', progress: 100, rowCount: ref.file.rows, fileName: ref.file.fileName, fileSize: ref.file.size,
      contentType: ref.file.contentType, fileDeletedAt: null, completedAt: now,
      expiresAt: new Date(now.getTime() + config.ANALYTICS_REPORT_RETENTION_DAYS * 86_400_000),
    });
    recordEvent(tx, ref, { type: 'report.ready', object: toReportView(r, signer, now), requestId: ref.requestId });
  }, signer);
}

export function failReport(orm: MikroORM, ref: ReportRef & { code: string; message: string }): Promise<ReportView> {
  return updateReport(orm, ref, (r, tx) => {
    if (r.status === 'failed') return;
    Object.assign(r, { status: 'failed', failureCode: ref.code, failureMessage: ref.message.slice(0, 1000), completedAt: new Date() });
    recordEvent(tx, ref, { type: 'report.failed', object: toReportView(r, null, new Date()), requestId: ref.requestId });
  }, null);
}

export function cancelReportRecord(orm: MikroORM, ref: ReportRef): Promise<ReportView> {
  return updateReport(orm, ref, (r) => {
    if (r.status === 'canceled') return;
    Object.assign(r, { status: 'canceled', completedAt: new Date() });
  }, null);
}

/** Deletes the files whose retention ended; returns how many. */
export async function purgeExpiredReportFiles(orm: MikroORM, config: Pick<Config, 'ANALYTICS_REPORTS_DIR'>, now: Date): Promise<number> {
  const em = orm.em.fork();
  const rows = await em.execute<{ id: string; account_id: string }[]>(
    `select id, account_id from analytics_reports where file_name is not null and file_deleted_at is null and expires_at <= ? order by expires_at limit 1000`,
    [now.toISOString()],
  );
  for (const r of rows) {
    await removeReportFiles(config, r.account_id, r.id);
    await em.execute('update analytics_reports set file_deleted_at = ?, updated_at = now() where id = ?', [now.toISOString(), r.id]);
  }
  return rows.length;
}
