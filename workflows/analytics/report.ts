import {
  CancellationScope, allHandlersFinished, condition, isCancellation, proxyActivities, setHandler,
} from '@temporalio/workflow';
import type { AnalyticsActivities } from '../../activities/analytics/index.ts';
import { REFUSALS, refuse } from '../kit/failures.ts';
import { recordStatus } from '../kit/search-attributes.ts';
import {
  DB_STEPS, RENDER_STEP, cancelReportUpdate, reportRecordedUpdate, reportStateQuery,
  type ReportLiveState, type ReportView, type ReportWorkflowInput,
} from './shared.ts';

const db = proxyActivities<AnalyticsActivities>(DB_STEPS);
const renderer = proxyActivities<AnalyticsActivities>(RENDER_STEP);

/**
 * One report (`report-rpt_…`): record it (queued), render it (running, progress in the row),
 * then succeeded with its file and `report.ready`, or failed with `report.failed`, or canceled.
 * A cancel cancels the render activity, which stops at its next page of rows and removes its
 * part file; a cancel that arrives after the render finished is refused (409).
 */
export async function reportWorkflow(input: ReportWorkflowInput): Promise<ReportView> {
  const ref = { reportId: input.reportId, accountId: input.accountId, livemode: input.livemode, requestId: input.requestId };
  const state: ReportLiveState = { reportId: input.reportId, run: input.run, phase: 'creating', status: null, cancelRequested: false, cancelReason: null };
  let view: ReportView | undefined;
  const rendering = new CancellationScope();

  const finished = () => state.phase === 'done';
  setHandler(reportStateQuery, () => ({ ...state }));
  setHandler(reportRecordedUpdate, async () => {
    await condition(() => view !== undefined);
    return view!;
  });
  setHandler(cancelReportUpdate, async ({ reason }) => {
    await condition(() => view !== undefined);
    if (!state.cancelRequested) {
      state.cancelRequested = true;
      state.cancelReason = reason;
      rendering.cancel();
    }
    await condition(finished);
    if (view!.status !== 'canceled') {
      throw refuse(REFUSALS.invalidTransition, `the report already ${view!.status}`, { current_state: view!.status });
    }
    return view!;
  }, {
    validator: (_cancel: { reason: string | null; requestId: string | null }) => {
      if (finished() || state.phase === 'finishing') {
        throw refuse(REFUSALS.invalidTransition, `the report already ${state.status ?? 'finished'}`, { current_state: state.status ?? 'succeeded' });
      }
    },
  });

  view = await db.recordReport(input);
  state.status = view.status;
  if (view.status === 'queued') {
    try {
      const file = await rendering.run(async () => {
        view = await db.markReportRunning(ref);
        state.status = view.status;
        recordStatus('running');
        state.phase = 'rendering';
        return renderer.renderReportFile(input);
      });
      state.phase = 'finishing';
      view = await db.completeReport({ ...ref, file });
    } catch (err) {
      state.phase = 'finishing';
      if (state.cancelRequested || isCancellation(err)) {
        view = await CancellationScope.nonCancellable(() => db.cancelReportRecord({ ...ref, reason: state.cancelReason }));
      } else {
        const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
        view = await db.failReport({ ...ref, code: 'render_failed', message });
      }
    }
  }
  state.status = view.status;
  recordStatus(view.status);
  state.phase = 'done';
  await condition(allHandlersFinished);
  return view;
}
