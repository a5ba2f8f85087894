import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { kpis } from '../../../domain/analytics/kpis.ts';
import { GRANULARITIES, PERIODS, isTimeZone } from '../../../domain/analytics/periods.ts';
import { FORMAT_FILES } from '../../../domain/analytics/render.ts';
import {
  MAX_REPORT_DAYS, cancelReport, downloadSigner, generateReport, getReport, listReports, reportFileFor, type ReportsContext,
} from '../../../domain/analytics/reports.ts';
import { MAX_HORIZON_DAYS, revenueAnalytics, revenueForecast } from '../../../domain/analytics/revenue.ts';
import {
  REPORT_FORMATS, REPORT_STATUSES, REPORT_TYPES, kpisSchema, reportFiltersSchema, reportSchema, revenueAnalyticsSchema, revenueForecastSchema,
} from '../../../domain/analytics/schemas.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { csv, currency, isoDate } from '../../http/schemas.ts';
import { sendReportFile } from './report-file.ts';

const timezone = z
  .string()
  .min(1)
  .max(64)
  .refine(isTimeZone, 'expected an IANA time zone name such as Europe/Berlin, America/New_York or UTC')
  .describe('IANA zone the days are cut in (DST-aware). Default UTC.');

const windowQuery = {
  period: z.enum(PERIODS, 'expected one of 7d, 30d, 90d, 12m, custom').default('30d')
    .describe('7d, 30d, 90d: that many local days ending today; 12m: a year ending today; custom: start to end.'),
  start: isoDate.optional().describe('period=custom: first local date, inclusive.'),
  end: isoDate.optional().describe('period=custom: last local date, inclusive (at most 5 years after start).'),
  currency: currency.optional().describe('Reporting currency; other currencies are converted at the stored exchange rates. Default: the currency with the most revenue in the period.'),
  timezone: timezone.default('UTC'),
};

const revenueQuery = z.strictObject({
  ...windowQuery,
  granularity: z.enum(GRANULARITIES, 'expected day, week or month').default('day').describe('Bucket of `trends` (weeks start on Monday).'),
});

const kpisQuery = z.strictObject(windowQuery);

const forecastQuery = z.strictObject({
  horizon: z.coerce.number({ error: 'expected a whole number of days' }).int('expected a whole number of days')
    .min(1, 'must be at least 1').max(MAX_HORIZON_DAYS, `must be at most ${MAX_HORIZON_DAYS} (days)`).default(30)
    .describe(`Days to forecast, 1–${MAX_HORIZON_DAYS}.`),
  granularity: z.enum(GRANULARITIES, 'expected day, week or month').default('day'),
  currency: currency.optional(),
  timezone: timezone.default('UTC'),
});

const generateBody = z.strictObject({
  report_type: z.enum(REPORT_TYPES, 'expected one of financial, customer, inventory, sales'),
  date_range: z.strictObject({ start: isoDate, end: isoDate }).describe(`ISO dates, start ≤ end, at most ${MAX_REPORT_DAYS} days.`),
  format: z.enum(REPORT_FORMATS, 'expected one of pdf, excel, csv, json'),
  timezone: timezone.default('UTC'),
  currency: currency.optional().describe('Recorded with the report and shown in its parameters; amounts keep their own currency per row.'),
  filters: reportFiltersSchema.default({}),
});

const reportId = z.strictObject({ report_id: z.string().min(1).max(64) });
const cancelBody = z.strictObject({ reason: z.string().max(500).optional() });
const listFilters = z.strictObject({
  ...listQuery,
  status: csv(z.enum(REPORT_STATUSES)).optional(),
  report_type: csv(z.enum(REPORT_TYPES)).optional(),
});
const downloadQuery = z.strictObject({
  expires: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('From download_url.'),
  signature: z.string().min(1).max(200).optional().describe('From download_url.'),
});

async function reportsContext(deps: AppDeps, em: EntityManager): Promise<ReportsContext> {
  return { em, temporal: deps.temporal, signer: await downloadSigner(deps.orm, deps.config) };
}

const location = (id: string) => `/v3/analytics/reports/${id}`;

export const analyticsRoutes = [
  route({
    method: 'get', path: '/v3/analytics/revenue', operationId: 'revenueAnalytics', tag: 'Analytics',
    summary: 'Revenue in one reporting currency and time zone: total, growth, breakdown, trends, MRR movements and a 30-day forecast',
    permission: 'analytics:read', status: 200, query: revenueQuery, response: revenueAnalyticsSchema,
    async handler({ em, auth, query }) {
      return { body: await revenueAnalytics(em(), auth, query, new Date()) };
    },
  }),
  route({
    method: 'get', path: '/v3/analytics/kpis', operationId: 'kpis', tag: 'Analytics',
    summary: 'The KPI set, each with its previous-period value and change; null with a reason where data is missing',
    permission: 'analytics:read', status: 200, query: kpisQuery, response: kpisSchema,
    async handler({ em, auth, query }) {
      return { body: await kpis(em(), auth, query, new Date()) };
    },
  }),
  route({
    method: 'get', path: '/v3/analytics/revenue-forecasting', operationId: 'revenueForecasting', tag: 'Analytics',
    summary: 'Revenue forecast with 80 % and 95 % intervals and the model\'s backtest error (422 with too little history)',
    permission: 'analytics:read', status: 200, query: forecastQuery, response: revenueForecastSchema,
    async handler({ em, auth, query }) {
      return { body: await revenueForecast(em(), auth, query, new Date()) };
    },
  }),
  route({
    method: 'post', path: '/v3/analytics/reports/generate', operationId: 'generateReport', tag: 'Analytics',
    summary: 'Generate a report (PDF, Excel, CSV or JSON) in a workflow; 202 with the queued report and Location',
    permission: 'analytics:write', status: 202, temporal: true, body: generateBody, response: reportSchema,
    async handler({ deps, em, auth, body, requestId, idempotencyKey, resourceId }) {
      const view = await generateReport(await reportsContext(deps, em()), auth, {
        reportId: await resourceId('report'), reportType: body.report_type, format: body.format,
        start: body.date_range.start, end: body.date_range.end, timezone: body.timezone, currency: body.currency ?? null,
        filters: body.filters, requestIdempotencyKey: idempotencyKey, requestId,
      });
      return { status: 202, body: view, headers: { Location: location(view.id) } };
    },
  }),
  listRoute({
    path: '/v3/analytics/reports', operationId: 'listReports', tag: 'Analytics',
    summary: 'Reports, newest first; filter by status and report_type', permission: 'analytics:read',
    item: reportSchema, query: listFilters,
    async list({ deps, em, query }, page) {
      return listReports(await reportsContext(deps, em()), page, { status: query.status, report_type: query.report_type });
    },
  }),
  getRoute({
    path: '/v3/analytics/reports/{report_id}', operationId: 'getReport', tag: 'Analytics',
    summary: 'A report: status, progress, file and signed download_url', permission: 'analytics:read',
    params: reportId, response: reportSchema,
    get: async ({ deps, em, params }) => getReport(await reportsContext(deps, em()), params.report_id),
  }),
  route({
    method: 'post', path: '/v3/analytics/reports/{report_id}/cancel', operationId: 'cancelReport', tag: 'Analytics',
    summary: 'Cancel a queued or running report (409 with current_state once it finished)', permission: 'analytics:write',
    status: 200, temporal: true, params: reportId, body: cancelBody, response: reportSchema,
    async handler({ deps, em, params, body, requestId }) {
      return { body: await cancelReport(await reportsContext(deps, em()), params.report_id, body.reason ?? null, requestId) };
    },
  }),
  route({
    method: 'get', path: '/v3/analytics/reports/{report_id}/download', operationId: 'downloadReport', tag: 'Analytics',
    summary: 'The report\'s file, streamed with its Content-Type and Content-Disposition (409 until it succeeded, 410 after retention)',
    permission: 'analytics:read', status: 200, params: reportId, query: downloadQuery, response: z.string(),
    binary: { mediaType: Object.values(FORMAT_FILES).map((f) => f.contentType.split(';')[0]!), description: 'The report file (PDF, Excel, CSV or JSON, by the report\'s format)' },
    responses: {
      403: { description: 'download_url_invalid or download_url_expired: the signature in the query does not match or has expired' },
      409: { description: 'report_not_ready: the report has not succeeded (current_state)' },
      410: { description: 'report_expired: the file was deleted at the end of its retention period' },
    },
    async handler({ deps, em, auth, params, query, res }) {
      const file = await reportFileFor(await reportsContext(deps, em()), deps.config, auth, params.report_id, query);
      await sendReportFile(res, deps.config, params.report_id, file);
      return { body: null };
    },
  }),
];
