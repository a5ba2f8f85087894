import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { recordAdminAction } from '../../../domain/analytics/admin.ts';
import { refreshRollup } from '../../../domain/analytics/queries.ts';
import { cancelReport, describeReportWorkflow, downloadSigner, getReport, rerunReport } from '../../../domain/analytics/reports.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { searchAttributes } from '../../../platform/temporal-kit.ts';
import { BP_SEARCH_ATTRIBUTES } from '../../../workflows/kit/search-attributes.ts';
import { adminProcedure, router, type AdminContext } from '../trpc.ts';

const scope = z.object({ accountId: z.string().min(1), livemode: z.boolean() });
const reportRef = scope.extend({ reportId: z.string().min(1) });
/** Every steering action names who did it and why (kept in analytics_admin_actions). */
const action = { operator: z.string().min(1).max(200), reason: z.string().min(1).max(1000) };

function temporalOf(ctx: AdminContext) {
  if (!ctx.temporal) throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'This admin API has no Temporal connection.' });
  return ctx.temporal;
}

async function reportsContext(ctx: AdminContext, input: z.infer<typeof scope>) {
  // The signer's TTL only shapes the download_url shown; the admin API shows the default.
  return { em: scopedEm(ctx.orm, input), temporal: temporalOf(ctx), signer: await downloadSigner(ctx.orm, { ANALYTICS_DOWNLOAD_URL_TTL_SECONDS: 3600 }) };
}

const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Admin: find report workflows, read their live state, cancel or re-run them, refresh the revenue rollups. */
export const analyticsAdminRouter = router({
  /** Report workflows by search attribute (account, mode, customer, status), newest first, at most 50. */
  findReports: adminProcedure
    .input(z.object({
      accountId: z.string().min(1).optional(), livemode: z.boolean().optional(), customerId: z.string().min(1).optional(),
      reportId: z.string().min(1).optional(), status: z.string().min(1).optional(),
    }))
    .query(async ({ ctx, input }) => {
      const K = BP_SEARCH_ATTRIBUTES;
      const terms = [`WorkflowType = 'reportWorkflow'`];
      if (input.accountId) terms.push(`${K.accountId.name} = ${quote(input.accountId)}`);
      if (input.livemode !== undefined) terms.push(`${K.mode.name} = '${input.livemode ? 'live' : 'test'}'`);
      if (input.customerId) terms.push(`${K.customerId.name} = ${quote(input.customerId)}`);
      if (input.reportId) terms.push(`${K.resourceId.name} = ${quote(input.reportId)}`);
      if (input.status) terms.push(`${K.status.name} = ${quote(input.status)}`);
      const out: { workflow_id: string; run_id: string; status: string; report_id: string | null; started_at: string }[] = [];
      for await (const wf of temporalOf(ctx).client.workflow.list({ query: terms.join(' AND ') })) {
        const attrs = wf.typedSearchAttributes;
        out.push({
          workflow_id: wf.workflowId, run_id: wf.runId, status: wf.status.name,
          report_id: attrs.get(K.resourceId) ?? null, started_at: wf.startTime.toISOString(),
        });
        if (out.length >= 50) break;
      }
      return out;
    }),
  /** The report's row and its workflow's live state (the `reportState` query). */
  describeReport: adminProcedure.input(reportRef).query(async ({ ctx, input }) => {
    const report = await getReport(await reportsContext(ctx, input), input.reportId);
    return { report, workflow: await describeReportWorkflow(temporalOf(ctx), input.reportId) };
  }),
  cancelReport: adminProcedure.input(reportRef.extend(action)).mutation(async ({ ctx, input }) => {
    const report = await cancelReport(await reportsContext(ctx, input), input.reportId, `admin ${input.operator}: ${input.reason}`, null);
    await recordAdminAction(ctx.orm, { ...input, action: 'cancel_report', target: input.reportId });
    return report;
  }),
  rerunReport: adminProcedure.input(reportRef.extend(action)).mutation(async ({ ctx, input }) => {
    const result = await rerunReport(scopedEm(ctx.orm, input), temporalOf(ctx), input, input.reportId);
    await recordAdminAction(ctx.orm, { ...input, action: 'rerun_report', target: input.reportId, details: result });
    return { report_id: input.reportId, ...result, search_attributes: searchAttributes({ ...input, resourceId: input.reportId }).map((p) => p.key.name) };
  }),
  refreshRollups: adminProcedure.input(scope.extend(action)).mutation(async ({ ctx, input }) => {
    const result = await refreshRollup(ctx.orm.em.fork(), input);
    await recordAdminAction(ctx.orm, { ...input, action: 'refresh_rollups', target: `${input.accountId}:${input.livemode ? 'live' : 'test'}`, details: result });
    return result;
  }),
  /** The recorded actions on a target (a report id, or `<account>:<mode>` for rollups), newest first. */
  actions: adminProcedure.input(z.object({ target: z.string().min(1) })).query(({ ctx, input }) =>
    ctx.orm.em.fork().execute<{ operator: string; reason: string; action: string; created_at: Date }[]>(
      'select operator, reason, action, details, created_at from analytics_admin_actions where target = ? order by id desc limit 100', [input.target])),
});
