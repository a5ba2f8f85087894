import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { openReportFile, type ReportFile, type StorageConfig } from '../../../domain/analytics/reports.ts';
import { ApiError } from '../../../platform/errors.ts';

/**
 * Streams a report's file (from the directory or the S3-compatible store) with its Content-Type
 * and Content-Disposition, for both download paths: the /v3 route with an API key, and the
 * key-less signed link. A file already removed from the store is 410 `report_expired`, answered
 * before any byte is sent.
 */
export async function sendReportFile(res: Response, config: StorageConfig, reportId: string, file: ReportFile): Promise<void> {
  const opened = await openReportFile(config, file);
  if (!opened) {
    throw new ApiError({
      status: 410, code: 'report_expired', title: 'Gone', detail: `Report ${reportId}'s file is no longer stored.`,
      suggestion: 'Generate the report again with POST /v3/analytics/reports/generate.',
    });
  }
  res.status(200);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Length', String(opened.size || file.size));
  res.setHeader('Content-Disposition', `attachment; filename="${file.name}"`);
  res.setHeader('Cache-Control', 'private, no-store');
  await pipeline(opened.stream, res);
}
