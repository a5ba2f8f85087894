import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import { REPORT_FORMATS, REPORT_STATUSES, REPORT_TYPES, type ReportFilters } from './schemas.ts';

/** A generated report: a read model written only by its workflow's activities (`report-rpt_…`). */
export const AnalyticsReport = defineEntity({
  name: 'AnalyticsReport',
  tableName: 'analytics_reports',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    reportType: p.enum(REPORT_TYPES),
    format: p.enum(REPORT_FORMATS),
    status: p.enum(REPORT_STATUSES),
    progress: p.smallint().default(0),
    dateStart: p.string().columnType('date'),
    dateEnd: p.string().columnType('date'),
    timezone: p.string(),
    currency: p.string().nullable(),
    filters: p.json<ReportFilters>(),
    rowCount: p.integer().nullable(),
    fileName: p.string().nullable(),
    fileSize: p.bigint('number').nullable(),
    contentType: p.string().nullable(),
    fileDeletedAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.text().nullable(),
    runs: p.integer().default(1),
    workflowId: p.string(),
    requestIdempotencyKey: p.string().nullable(),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type AnalyticsReport = InferEntity<typeof AnalyticsReport>;
