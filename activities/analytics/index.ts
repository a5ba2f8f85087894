import { rm } from 'node:fs/promises';
import { ApplicationFailure, Context, CancelledFailure } from '@temporalio/activity';
import { refreshRollup, scopesWithRevenue } from '../../domain/analytics/queries.ts';
import { FORMAT_FILES } from '../../domain/analytics/render.ts';
import { renderInThread, type RenderJob } from '../../domain/analytics/render-runner.ts';
import {
  cancelReportRecord, completeReport, downloadSigner, failReport, markReportRunning, preparePartFile, publishFile, purgeExpiredReportFiles,
  recordProgress, recordReport, removeReportFiles,
} from '../../domain/analytics/reports.ts';
import type { ActivityDeps } from '../../platform/area.ts';
import type { RenderedFile, ReportRef, ReportWorkflowInput } from '../../workflows/analytics/shared.ts';

export type AnalyticsActivityDeps = Pick<ActivityDeps, 'orm' | 'config' | 'logger'>;

/** How long the sandbox scenario `hold_at_half` holds a render before carrying on. */
const HOLD_LIMIT_MS = 120_000;

export function createAnalyticsActivities(deps: AnalyticsActivityDeps) {
  const { orm, config } = deps;
  return {
    recordReport: (input: ReportWorkflowInput) => recordReport(orm, input),
    markReportRunning: (ref: ReportRef) => markReportRunning(orm, ref),
    async completeReport(ref: ReportRef & { file: RenderedFile }) {
      return completeReport(orm, config, await downloadSigner(orm, config), ref);
    },
    failReport: async (ref: ReportRef & { code: string; message: string }) => {
      await removeReportFiles(config, ref.accountId, ref.reportId);
      return failReport(orm, ref);
    },
    async cancelReportRecord(ref: ReportRef & { reason: string | null }) {
      await removeReportFiles(config, ref.accountId, ref.reportId);
      return cancelReportRecord(orm, ref);
    },

    /**
     * Streams the report's rows from PostgreSQL (keyset pages) into the renderer, heartbeating
     * and recording progress after every page. Each attempt writes its own part file (older parts
     * are removed first) and renames it into place at the end, so a worker that dies mid-render
     * leaves no second file. Canceled: stops at the next page and removes the part file.
     */
    async renderReportFile(input: ReportWorkflowInput): Promise<RenderedFile> {
      const ctx = Context.current();
      const ref: ReportRef = { reportId: input.reportId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId };
      const scenario = input.livemode ? undefined : input.filters.sandbox_scenario;
      if (scenario === 'render_failure') {
        // Fails for good (not retried), as a renderer that cannot handle the data would.
        throw ApplicationFailure.create({ type: 'SandboxRenderFailure', message: 'sandbox scenario render_failure: the renderer failed on purpose', nonRetryable: true });
      }
      const part = await preparePartFile(config, input.accountId, input.reportId, ctx.info.attempt);
      const heartbeat = setInterval(() => ctx.heartbeat(), 1000);
      try {
        ctx.heartbeat();
        const job: RenderJob = {
          databaseUrl: orm.config.get('clientUrl')!,
          params: {
            scope: { accountId: input.accountId, livemode: input.livemode }, reportType: input.reportType,
            start: input.start, end: input.end, timezone: input.timezone, filters: input.filters,
          },
          format: input.format, path: part,
          parameters: [
            ['Report', input.reportType], ['Report id', input.reportId], ['From', input.start], ['To', input.end], ['Time zone', input.timezone],
            ...(input.currency ? [['Currency', input.currency] as [string, string]] : []),
            ...Object.entries(input.filters).filter(([k]) => k !== 'sandbox_scenario').map(([k, v]) => [`Filter ${k}`, Array.isArray(v) ? v.join(', ') : String(v)] as [string, string]),
            ['Mode', input.livemode ? 'live' : 'test'],
          ],
          // Holds on the first attempt only: a retry (after a worker died mid-render) runs through.
          holdAtHalf: scenario === 'hold_at_half' && ctx.info.attempt === 1,
        };
        const rows = await renderInThread(job, ctx.cancellationSignal, {
          async progress(done, total) {
            ctx.heartbeat({ rows: done });
            await recordProgress(orm, ref, total === 0 ? 99 : Math.min(99, Math.floor((done / total) * 100)));
          },
          async held() {
            await recordProgress(orm, ref, 50);
            const deadline = Date.now() + HOLD_LIMIT_MS;
            while (!ctx.cancellationSignal.aborted && Date.now() < deadline) await ctx.sleep(250).catch(() => undefined);
          },
        });
        const file = FORMAT_FILES[input.format];
        const fileName = `${input.reportId}.${file.extension}`;
        const size = await publishFile(part, config, input.accountId, fileName, file.contentType);
        return { fileName, size, rows, contentType: file.contentType };
      } catch (err) {
        // Only this attempt's part file: a canceled attempt can end after its workflow did, when a
        // re-run may already have published the report's file under the same name.
        await rm(part, { force: true }).catch(() => undefined);
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('report canceled');
        throw err;
      } finally {
        clearInterval(heartbeat);
      }
    },

    async refreshAllRollups(): Promise<number> {
      const scopes = await scopesWithRevenue(orm.em.fork());
      for (const scope of scopes) {
        Context.current().heartbeat();
        await refreshRollup(orm.em.fork(), scope);
      }
      return scopes.length;
    },
    purgeExpiredReports: ({ now }: { now: string | null }) => purgeExpiredReportFiles(orm, config, now ? new Date(now) : new Date()),
  };
}

export type AnalyticsActivities = ReturnType<typeof createAnalyticsActivities>;
