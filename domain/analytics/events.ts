import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { reportSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Report = z.input<typeof reportSchema>;

const reportExample = (status: 'succeeded' | 'failed'): Report => ({
  id: 'rpt_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'report', livemode: false, report_type: 'financial', format: 'pdf', status,
  progress: status === 'succeeded' ? 100 : 40, date_range: { start: '2025-01-01', end: '2025-03-31' }, timezone: 'Europe/Berlin', currency: 'EUR',
  filters: {}, row_count: status === 'succeeded' ? 1250 : null,
  file: status === 'succeeded' ? { name: 'rpt_01jpa7v0f4j6kn8r1w3y5a7c9e.pdf', size: 482_133, content_type: 'application/pdf' } : null,
  download_url: status === 'succeeded' ? '/files/reports/rpt_01jpa7v0f4j6kn8r1w3y5a7c9e?expires=1741948200&signature=…' : null,
  download_url_expires_at: status === 'succeeded' ? '2025-03-14T10:30:00.000Z' : null,
  expires_at: status === 'succeeded' ? '2025-03-21T09:30:00.000Z' : null,
  failure: status === 'failed' ? { code: 'render_failed', message: 'The renderer failed.' } : null,
  workflow_id: 'report-rpt_01jpa7v0f4j6kn8r1w3y5a7c9e', created_at: ts, updated_at: ts, started_at: ts, completed_at: ts,
});

/** Events the analytics area records. */
export const analyticsEvents = [
  eventKind({
    type: 'report.ready', aboutCustomer: false, schema: reportSchema,
    description: 'A report finished rendering; its download_url is signed and expires (fetch a fresh one with GET /v3/analytics/reports/{id}).',
    example: reportExample('succeeded'),
  }),
  eventKind({
    type: 'report.failed', aboutCustomer: false, schema: reportSchema,
    description: 'A report could not be rendered (after its retries); failure says why.',
    example: reportExample('failed'),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof analyticsEvents)[number]['type'], true> {}
}
