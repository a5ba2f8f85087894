import type { Router } from 'express';
import { z } from 'zod';
import { SIGNED_DOWNLOAD_PREFIX, downloadSigner, signedReportFile } from '../../../domain/analytics/reports.ts';
import type { AppDeps } from '../../http/deps.ts';
import type { ExtraRoute } from '../../openapi.ts';
import { sendReportFile } from './report-file.ts';

/**
 * GET /files/reports/{report_id}?expires=…&signature=… — the report's `download_url`, outside /v3
 * (the area's `pages` hook) so it needs no API key: a browser, a mail client or a spreadsheet tool
 * opens it as it is. Its signature (HMAC of report, account, mode and expiry under the
 * installation's key) is the credential; refusals are problem+json like the API's.
 */
export const signedDownloadPages = {
  prefixes: [SIGNED_DOWNLOAD_PREFIX],
  mount(router: Router, deps: AppDeps): void {
    router.get(`${SIGNED_DOWNLOAD_PREFIX}:report_id`, (req, res, next) => {
      const first = (v: unknown) => (typeof v === 'string' ? v : undefined);
      void (async () => {
        const signer = await downloadSigner(deps.orm, deps.config);
        const reportId = req.params.report_id;
        const file = await signedReportFile(deps.orm.em, signer, deps.config, reportId,
          { expires: first(req.query.expires), signature: first(req.query.signature) });
        await sendReportFile(res, deps.config, reportId, file);
      })().catch((err: unknown) => (res.headersSent ? res.destroy(err as Error) : next(err)));
    });
  },
};

/** Its entry in the OpenAPI document (served outside /v3, so not a route spec). */
export const signedDownloadDoc: ExtraRoute = {
  method: 'get', path: `${SIGNED_DOWNLOAD_PREFIX}{report_id}`, tag: 'Analytics', security: false,
  summary: 'A report\'s file through its signed download_url (query `expires` and `signature`); no API key: the signature is the credential',
  pathParams: z.object({ report_id: z.string().describe('The report (rpt_…), as in download_url') }),
  responses: {
    200: { description: 'The file, with its Content-Type and Content-Disposition: attachment' },
    401: { description: 'download_url_unsigned: no signature (problem+json)' },
    403: { description: 'download_url_invalid (changed, for another report, account or mode) or download_url_expired (problem+json)' },
    409: { description: 'report_not_ready (problem+json)' },
    410: { description: 'report_expired: the file was deleted at the end of its retention period (problem+json)' },
    503: { description: 'service_unavailable: the file store cannot be reached (problem+json, Retry-After)' },
  },
};
