import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { searchAttributes } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import {
  customerSegmentsWorkflowId, segmentEvaluationWorkflowId, segmentScheduleId,
  type CustomerSegmentsInput, type SegmentEvaluationInput, type SegmentEvaluationResult,
} from '../../workflows/crm/shared.ts';
import { perPass, type EventConsumer, type WorkflowStartRequest } from '../events/consumers.ts';
import { Customer, customerView, type CustomerView } from '../customers/public.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import { Segment } from './entities.ts';
import { customerMetricsOf } from './metrics.ts';
import type { SegmentMembershipView, SegmentView } from './schemas.ts';
import { ruleLimitErrors, ruleSql, usesMetrics, type SegmentRuleGroup } from './segment-rules.ts';

/**
 * Customer segments: saved rules over customer fields and metrics (domain/crm/segment-rules.ts).
 * Membership is computed in SQL, set-based: one statement finds the customers that match, inserts
 * the new members, deletes the ones that no longer match, and answers the changes, for which
 * `customer.segment.entered` / `customer.segment.left` are recorded in the same transaction.
 *
 * When: a full evaluation on create and on a change of the rules (workflow
 * `segment-evaluation-<seg>-<version>`), on demand (POST …/refresh), and nightly (a Temporal
 * schedule per segment, `segment-nightly-<seg>`); and, for one customer at a time, after every
 * event about that customer in an account that has active segments (the outbox consumer below,
 * workflow `segment-membership-<cus>-<evt>`).
 *
 * The journey metrics (total_ltv, engagement_score, lifecycle_stage) come from a per-customer
 * snapshot (`crm_customer_metrics`) written from domain/crm/metrics.ts: after each event about the
 * customer, for customers without one before an evaluation, and nightly for snapshots older than
 * a day (engagement decays and lifecycle stages age without events).
 */

export interface SegmentDeps {
  temporal: TemporalHandle;
}

export interface SegmentInput {
  name: string;
  description?: string | null;
  rules: SegmentRuleGroup;
  metadata?: Record<string, string>;
}

/** Nightly evaluations refresh metric snapshots older than this first. */
export const NIGHTLY_STALE_MS = 20 * 3_600_000;
/** Customers whose metrics one activity refreshes. */
export const METRICS_BATCH = 200;

export function segmentView(s: Segment): SegmentView {
  return {
    id: s.id, object: 'segment', livemode: s.livemode, name: s.name, description: s.description ?? null, rules: s.rules,
    status: s.status, member_count: s.memberCount, last_evaluated_at: s.lastEvaluatedAt?.toISOString() ?? null,
    evaluation_workflow_id: segmentEvaluationWorkflowId(s.id, `v${s.rulesVersion}`),
    schedule_id: s.status === 'active' ? segmentScheduleId(s.id) : null,
    metadata: s.metadata, created_at: s.createdAt.toISOString(), updated_at: s.updatedAt.toISOString(),
  };
}

function checkRules(rules: SegmentRuleGroup): void {
  const errors = ruleLimitErrors(rules);
  if (errors.length) throw validationFailed(errors);
}

function evaluationInput(scope: Scope, segmentId: string, staleAfterMs: number): SegmentEvaluationInput {
  return { accountId: scope.accountId, livemode: scope.livemode, segmentId, staleAfterMs };
}

/** Starts a full evaluation under `workflowId` (an existing run of that id is left alone). */
async function startEvaluation(deps: SegmentDeps, scope: Scope, segmentId: string, suffix: string) {
  const workflowId = segmentEvaluationWorkflowId(segmentId, suffix);
  try {
    await deps.temporal.client.workflow.start('segmentEvaluationWorkflow', {
      workflowId, taskQueue: deps.temporal.taskQueue('crm'), args: [evaluationInput(scope, segmentId, Number.MAX_SAFE_INTEGER)],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: segmentId }),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return deps.temporal.client.workflow.getHandle<(i: SegmentEvaluationInput) => Promise<SegmentEvaluationResult>>(workflowId);
}

/** The nightly schedule of a segment (created once; safe to call again). */
async function ensureSchedule(deps: SegmentDeps, scope: Scope, segmentId: string): Promise<void> {
  try {
    await deps.temporal.client.schedule.create({
      scheduleId: segmentScheduleId(segmentId),
      spec: { calendars: [{ hour: 3, minute: 0 }], jitter: '30 minutes' },
      action: {
        type: 'startWorkflow', workflowType: 'segmentEvaluationWorkflow', workflowId: segmentScheduleId(segmentId),
        taskQueue: deps.temporal.taskQueue('crm'), args: [evaluationInput(scope, segmentId, NIGHTLY_STALE_MS)],
        typedSearchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: segmentId }),
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}

/** How long create/update/refresh wait for the evaluation before answering with the state so far. */
const EVALUATION_WAIT_MS = 10_000;

async function waitBriefly(promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, EVALUATION_WAIT_MS)))]);
  clearTimeout(timer);
}

async function findSegment(em: EntityManager, id: string): Promise<Segment> {
  const segment = await em.findOne(Segment, { id });
  if (!segment) throw notFound('segment', id);
  return segment;
}

/**
 * Creates a segment, its nightly schedule and its first evaluation, and answers once the first
 * evaluation finished (or after EVALUATION_WAIT_MS with `last_evaluated_at` still null).
 */
export async function createSegment(deps: SegmentDeps, em: EntityManager, scope: Scope, id: string, input: SegmentInput): Promise<SegmentView> {
  checkRules(input.rules);
  await ensureSchedule(deps, scope, id);
  const existing = await em.findOne(Segment, { id });
  if (!existing) {
    em.create(Segment, {
      id, ...scopeColumns(scope), name: input.name, description: input.description ?? null, rules: input.rules, status: 'active',
      rulesVersion: 1, memberCount: 0, lastEvaluatedAt: null, metadata: input.metadata ?? {},
    });
    await em.flush();
  }
  await waitBriefly((await startEvaluation(deps, scope, id, 'v1')).result());
  return segmentView(await em.refreshOrFail(await findSegment(em, id)));
}

/** Segment by id for GET /v3/segments/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readSegment(orm: MikroORM, scope: Scope, id: string): Promise<SegmentView> {
  return segmentView(await readScopedOr404(orm, scope, Segment, id, 'segment'));
}

export async function listSegments(
  em: EntityManager, filters: { status?: ('active' | 'archived')[] },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<SegmentView[]> {
  const where: Record<string, unknown>[] = [page.where];
  if (filters.status) where.push({ status: { $in: filters.status } });
  return (await em.find(Segment, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 })).map(segmentView);
}

function refuseArchived(segment: Segment): void {
  if (segment.status === 'archived') {
    throw conflict('invalid_state_transition', `Segment ${segment.id} is archived.`, 'Create a new segment; an archived one no longer changes.', { current_state: 'archived' });
  }
}

/** Renames or changes a segment; new rules bump `rules_version` and re-evaluate it. */
export async function updateSegment(
  deps: SegmentDeps, em: EntityManager, scope: Scope, id: string, patch: Partial<SegmentInput> & { metadata?: Record<string, string | null> },
): Promise<SegmentView> {
  const segment = await findSegment(em, id);
  refuseArchived(segment);
  if (patch.rules) checkRules(patch.rules);
  if (patch.name !== undefined) segment.name = patch.name;
  if (patch.description !== undefined) segment.description = patch.description;
  if (patch.metadata) {
    const next = { ...segment.metadata };
    for (const [k, v] of Object.entries(patch.metadata)) {
      if (v === null || v === '') delete next[k];
      else next[k] = v;
    }
    segment.metadata = next;
  }
  const rulesChanged = patch.rules !== undefined && JSON.stringify(patch.rules) !== JSON.stringify(segment.rules);
  if (rulesChanged) {
    segment.rules = patch.rules!;
    segment.rulesVersion += 1;
  }
  await em.flush();
  if (rulesChanged) await waitBriefly((await startEvaluation(deps, scope, id, `v${segment.rulesVersion}`)).result());
  return segmentView(await em.refreshOrFail(segment));
}

/** Evaluates the whole segment now (metrics snapshots older than a day refreshed first). */
export async function refreshSegment(deps: SegmentDeps, em: EntityManager, scope: Scope, id: string, requestKey: string): Promise<SegmentView> {
  const segment = await findSegment(em, id);
  refuseArchived(segment);
  await waitBriefly((await startEvaluation(deps, scope, id, `r${requestKey}`)).result());
  return segmentView(await em.refreshOrFail(segment));
}

/**
 * Archives a segment: it stops being evaluated (its schedule is deleted) and its members are
 * cleared without `left` events (the segment is gone, the customers did not change).
 */
export async function archiveSegment(deps: SegmentDeps, em: EntityManager, id: string): Promise<SegmentView> {
  const segment = await findSegment(em, id);
  if (segment.status !== 'archived') {
    await em.transactional(async (tx) => {
      await tx.execute(`select id from crm_segments where id = ? for update`, [id]);
      await tx.execute(`delete from crm_segment_members where segment_id = ?`, [id]);
      await tx.execute(`update crm_segments set status = 'archived', member_count = 0, updated_at = now() where id = ?`, [id]);
    });
  }
  try {
    await deps.temporal.client.schedule.getHandle(segmentScheduleId(id)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  return segmentView(await em.refreshOrFail(segment));
}

/** The segment's members as customers, ordered by customer id (a page after `after`). */
export async function listSegmentCustomers(
  em: EntityManager, segmentId: string, page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<CustomerView[]> {
  await findSegment(em, segmentId);
  const cursor = page.where.id as { $lt?: string; $gt?: string } | undefined;
  const after = cursor?.$lt ?? cursor?.$gt ?? null;
  const op = page.direction === 'desc' ? '<' : '>';
  const rows = await em.execute<{ customer_id: string }[]>(
    // The segment was found in the caller's scope above; its members are only ever of that scope.
    `select customer_id from crm_segment_members where segment_id = ?
       ${after ? `and customer_id ${op} ?` : ''} order by customer_id ${page.direction} limit ?`,
    [segmentId, ...(after ? [after] : []), page.limit + 1],
  );
  const customers = await em.find(Customer, { id: { $in: rows.map((r) => r.customer_id) } });
  const byId = new Map(customers.map((c) => [c.id, c]));
  return rows.map((r) => byId.get(r.customer_id)).filter((c): c is Customer => !!c).map(customerView);
}

// ---- Evaluation (activities) ------------------------------------------------------------------

/** Writes the metrics snapshot of these customers (from the journey, domain/crm/metrics.ts). */
export async function refreshCustomerMetrics(em: EntityManager, scope: Scope, customerIds: string[]): Promise<number> {
  if (!customerIds.length) return 0;
  const rows = [...(await customerMetricsOf(em, customerIds))].map(([id, m]) => ({ id, ltv: m.total_ltv, score: m.engagement_score, stage: m.lifecycle_stage }));
  await em.execute(
    `insert into crm_customer_metrics (account_id, livemode, customer_id, total_ltv, engagement_score, lifecycle_stage, refreshed_at)
     select ?, ?, v.id, v.ltv, v.score, v.stage, now()
       from jsonb_to_recordset(?::jsonb) as v(id text, ltv numeric, score numeric, stage text)
     on conflict (account_id, livemode, customer_id) do update
       set total_ltv = excluded.total_ltv, engagement_score = excluded.engagement_score,
           lifecycle_stage = excluded.lifecycle_stage, refreshed_at = excluded.refreshed_at`,
    [scope.accountId, scope.livemode, JSON.stringify(rows)],
  );
  return rows.length;
}

/**
 * Refreshes the snapshots of up to `limit` customers (ids after `after`) that have none, or one
 * older than `staleAfterMs`; answers the last id looked at (null when there are no more).
 */
export async function refreshStaleMetrics(
  em: EntityManager, scope: Scope, opts: { after: string | null; limit: number; staleAfterMs: number },
): Promise<{ refreshed: number; last: string | null }> {
  const staleBefore = new Date(Date.now() - Math.min(opts.staleAfterMs, Date.now()));
  const rows = await em.execute<{ id: string }[]>(
    `select c.id from customers c
       left join crm_customer_metrics m on m.account_id = c.account_id and m.livemode = c.livemode and m.customer_id = c.id
      where c.account_id = ? and c.livemode = ? ${opts.after ? 'and c.id > ?' : ''}
        and (m.customer_id is null or m.refreshed_at < ?)
      order by c.id limit ?`,
    [scope.accountId, scope.livemode, ...(opts.after ? [opts.after] : []), staleBefore, opts.limit],
  );
  const refreshed = await refreshCustomerMetrics(em, scope, rows.map((r) => r.id));
  return { refreshed, last: rows.length === opts.limit ? rows.at(-1)!.id : null };
}

interface Change { customer_id: string; change: 'entered' | 'left' }

/**
 * Evaluates one segment, for every customer of the account or for one: the matching customers
 * (one SQL predicate), new members inserted, members that no longer match deleted, and one event
 * per change recorded in the same transaction. The segment row is locked, so evaluations of one
 * segment apply one after the other.
 */
export async function evaluateSegment(
  em: EntityManager, scope: Scope, segmentId: string, opts: { customerId?: string; now?: Date } = {},
): Promise<{ entered: number; left: number; members: number }> {
  const now = opts.now ?? new Date();
  return em.transactional(async (tx) => {
    const [segment] = await tx.execute<{ id: string; name: string; rules: SegmentRuleGroup; status: string }[]>(
      `select id, name, rules, status from crm_segments where id = ? and account_id = ? and livemode = ? for update`,
      [segmentId, scope.accountId, scope.livemode],
    );
    if (!segment || segment.status !== 'active') return { entered: 0, left: 0, members: 0 };
    const predicate = ruleSql(segment.rules, now);
    const one = opts.customerId ? 'and c.id = ?' : '';
    const oneMember = opts.customerId ? 'and sm.customer_id = ?' : '';
    const who = opts.customerId ? [opts.customerId] : [];
    const changes = await tx.execute<Change[]>(
      `with matching as (
         select c.id from customers c
           left join crm_customer_metrics m on m.account_id = c.account_id and m.livemode = c.livemode and m.customer_id = c.id
          where c.account_id = ? and c.livemode = ? ${one} and ${predicate.text}
       ), came as (
         insert into crm_segment_members (segment_id, customer_id, account_id, livemode, entered_at)
         select ?, id, ?, ?, ? from matching
         on conflict (segment_id, customer_id) do nothing
         returning customer_id
       ), gone as (
         delete from crm_segment_members sm
          where sm.segment_id = ? ${oneMember} and not exists (select 1 from matching x where x.id = sm.customer_id)
         returning sm.customer_id
       )
       select customer_id, 'entered' as change from came union all select customer_id, 'left' as change from gone`,
      [scope.accountId, scope.livemode, ...who, ...predicate.params, segmentId, scope.accountId, scope.livemode, now, segmentId, ...who],
    );
    if (changes.length) await recordMembershipEvents(tx, scope, segment, changes, now);
    const entered = changes.filter((c) => c.change === 'entered').length;
    const left = changes.length - entered;
    const [row] = opts.customerId
      ? await tx.execute<{ member_count: number }[]>(
        `update crm_segments set member_count = member_count + ? where id = ? returning member_count`, [entered - left, segmentId])
      : await tx.execute<{ member_count: number }[]>(
        `update crm_segments set member_count = (select count(*) from crm_segment_members where segment_id = ?), last_evaluated_at = ?
          where id = ? returning member_count`, [segmentId, now, segmentId]);
    return { entered, left, members: Number(row?.member_count ?? 0) };
  });
}

/** One outbox event per change, written set-based (a first evaluation may add every customer at once). */
async function recordMembershipEvents(
  tx: EntityManager, scope: Scope, segment: { id: string; name: string }, changes: Change[], now: Date,
): Promise<void> {
  const ids = changes.map(() => newId('event'));
  const example: Omit<SegmentMembershipView, 'customer_id' | 'change'> = {
    object: 'segment_membership', livemode: scope.livemode, segment_id: segment.id, segment_name: segment.name, at: now.toISOString(),
  };
  await tx.execute(
    `insert into events (id, account_id, livemode, type, data, customer_id, request_id, dispatched_at, customer_metrics, synthetic, created_at)
     select v.id, ?, ?, 'customer.segment.' || v.change,
            jsonb_build_object('object', ?::jsonb || jsonb_build_object('customer_id', v.customer_id, 'change', v.change)),
            v.customer_id, null, null, null, false, ?
       from jsonb_to_recordset(?::jsonb) as v(id text, customer_id text, change text)`,
    [scope.accountId, scope.livemode, JSON.stringify(example), now, JSON.stringify(changes.map((c, i) => ({ ...c, id: ids[i] })))],
  );
}

/** Every active segment of the account, evaluated for one customer. */
export async function evaluateCustomerSegments(em: EntityManager, scope: Scope, customerId: string): Promise<{ entered: number; left: number }> {
  const segments = await em.execute<{ id: string }[]>(
    `select id from crm_segments where account_id = ? and livemode = ? and status = 'active' order by id`, [scope.accountId, scope.livemode]);
  let entered = 0;
  let left = 0;
  for (const s of segments) {
    const r = await evaluateSegment(em, scope, s.id, { customerId });
    entered += r.entered;
    left += r.left;
  }
  return { entered, left };
}

export async function segmentUsesMetrics(em: EntityManager, scope: Scope, segmentId: string): Promise<boolean> {
  const [row] = await em.execute<{ rules: SegmentRuleGroup }[]>(
    `select rules from crm_segments where id = ? and account_id = ? and livemode = ?`, [segmentId, scope.accountId, scope.livemode]);
  return row ? usesMetrics(row.rules) : false;
}

// ---- The outbox consumer ------------------------------------------------------------------------

const SEGMENT_EVENTS = new Set(['customer.segment.entered', 'customer.segment.left']);

/**
 * After every event about a customer (but its own), in an account and mode with active segments:
 * one workflow refreshes the customer's metrics snapshot and re-evaluates their memberships.
 */
export const segmentMembershipConsumer: EventConsumer = {
  name: 'crm-segments',
  async plan(event, em) {
    if (!event.customerId || SEGMENT_EVENTS.has(event.type)) return [];
    const [active] = await perPass(em, 'crm-segments:active', () => em.execute<{ n: number }[]>(
      `select count(*)::int as n from crm_segments where account_id = ? and livemode = ? and status = 'active'`, [event.accountId, event.livemode]));
    if (!active?.n) return [];
    const input: CustomerSegmentsInput = { accountId: event.accountId, livemode: event.livemode, customerId: event.customerId, eventId: event.id };
    const start: WorkflowStartRequest = {
      workflowType: 'customerSegmentsWorkflow', workflowId: customerSegmentsWorkflowId(event.customerId, event.id), area: 'crm', args: [input],
      searchAttributes: searchAttributes({ accountId: event.accountId, livemode: event.livemode, customerId: event.customerId, resourceId: event.customerId }),
    };
    return [start];
  },
};

// ---- Admin (api/admin/crm/router.ts) ------------------------------------------------------------

export interface AdminAudit {
  operator: string;
  reason: string;
}

/** The segment with its nightly schedule's state (paused, note, next runs, recent runs) and its latest evaluation's status. */
export async function describeSegment(deps: SegmentDeps, em: EntityManager, id: string) {
  const segment = segmentView(await findSegment(em, id));
  let schedule: { paused: boolean; note: string | null; next_runs: string[]; recent_runs: string[] } | null = null;
  try {
    const d = await deps.temporal.client.schedule.getHandle(segmentScheduleId(id)).describe();
    schedule = {
      paused: d.state.paused, note: d.state.note ?? null,
      next_runs: d.info.nextActionTimes.map((t) => t.toISOString()),
      recent_runs: d.info.recentActions.map((a) => a.takenAt.toISOString()),
    };
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  // Null when it never started (a crash right after the segment was written) or left Temporal's retention.
  const evaluation = await deps.temporal.client.workflow.getHandle(segment.evaluation_workflow_id).describe()
    .then((d) => ({ workflow_id: segment.evaluation_workflow_id, status: d.status.name }), () => null);
  return { segment, schedule, evaluation };
}

/** Evaluates a segment now on an operator's request; the workflow's memo keeps who and why. */
export async function adminEvaluateSegment(deps: SegmentDeps, em: EntityManager, scope: Scope, id: string, audit: AdminAudit) {
  const segment = await findSegment(em, id);
  refuseArchived(segment);
  const workflowId = segmentEvaluationWorkflowId(id, `admin-${Date.now()}`);
  const handle = await deps.temporal.client.workflow.start('segmentEvaluationWorkflow', {
    workflowId, taskQueue: deps.temporal.taskQueue('crm'), args: [evaluationInput(scope, id, NIGHTLY_STALE_MS)],
    memo: { operator: audit.operator, reason: audit.reason },
    typedSearchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: id }),
  });
  const result = (await handle.result()) as SegmentEvaluationResult;
  return { workflow_id: workflowId, ...result };
}

/** Pauses or resumes a segment's nightly schedule; the schedule's note records who and why. */
export async function pauseSegmentSchedule(deps: SegmentDeps, em: EntityManager, id: string, paused: boolean, audit: AdminAudit) {
  await findSegment(em, id);
  const handle = deps.temporal.client.schedule.getHandle(segmentScheduleId(id));
  const note = `${audit.operator}: ${audit.reason}`;
  try {
    if (paused) await handle.pause(note);
    else await handle.unpause(note);
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) throw notFound('segment schedule', segmentScheduleId(id));
    throw err;
  }
  const d = await handle.describe();
  return { schedule_id: segmentScheduleId(id), paused: d.state.paused, note: d.state.note ?? null };
}
