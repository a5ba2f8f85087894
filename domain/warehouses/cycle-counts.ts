import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, notFound, validationFailed } from '../../platform/errors.ts';
import { searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import type { cycleCountWorkflow } from '../../workflows/warehouses/cycle-count.ts';
import {
  advanceCycleCountClockUpdate, approveCycleCountUpdate, closeCycleCountUpdate, cycleCountCreatedUpdate, cycleCountWorkflowId, recordCountsUpdate,
  type AbcPolicy, type Actor, type CloseInput, type CycleCountDraft,
} from '../../workflows/warehouses/shared.ts';
import { moveStock } from '../commerce/public.ts';
import { recordEvent } from '../events/outbox.ts';
import type { Scope } from '../scope.ts';
import { iso, requireWarehouse, sandboxClockOnly } from './inventory.ts';
import type { CycleCountView } from './schemas.ts';

/**
 * Cycle counts, one workflow each (workflows/warehouses/cycle-count.ts). The expected quantities
 * and the ledger's sequence number are frozen in one statement at the start; a line's count takes
 * the ledger's sequence number again, so the movements between the two (orders shipped while the
 * counter walked the aisles) are known exactly: variance = counted − (expected + movements during).
 * Variances within tolerance post at once; beyond it, the count waits for approval. Posting moves
 * every adjustment in one transaction to the ledger, with the count as reference.
 */

export const DEFAULT_TOLERANCE = { percent: 5, value: 10_000 };
export const DEFAULT_ABC: AbcPolicy = { a_days: 30, b_days: 91, c_days: 365 };
/** A ≈ the SKUs making up the first 80 % of consumption value, B the next 15 %, C the rest. */
export const ABC_SHARES = { a: 80, b: 95 };
export const DEFAULT_DEADLINE_DAYS = 7;

type Classification = NonNullable<CycleCountView['classification']>;

interface CountRow {
  id: string;
  livemode: boolean;
  warehouse_id: string;
  count_type: CycleCountView['count_type'];
  status: CycleCountView['status'];
  snapshot_seq: string;
  classification: Classification | null;
  tolerance_percent: string;
  tolerance_value: string;
  deadline: string;
  overdue_at: string | null;
  workflow_id: string;
  approved_by: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

interface LineRow {
  sku: string;
  location: string | null;
  abc_class: 'A' | 'B' | 'C' | null;
  expected: number;
  counted: number | null;
  movements_during: number;
  variance: number | null;
  unit_value: string;
  adjusted: number | null;
}

const COLUMNS = `id, livemode, warehouse_id, count_type, status, snapshot_seq, classification, tolerance_percent, tolerance_value,
  ${iso('deadline')} as deadline, ${iso('overdue_at')} as overdue_at, workflow_id, approved_by, ${iso('created_at')} as created_at,
  ${iso('updated_at')} as updated_at, ${iso('completed_at')} as completed_at`;

function exceeds(l: LineRow, percent: number, value: number): boolean {
  if (l.variance === null || l.variance === 0) return false;
  const base = Math.max(0, l.expected + l.movements_during);
  const v = Math.abs(l.variance);
  return v * 100 > percent * base || v * Number(l.unit_value) > value;
}

function view(c: CountRow, lines: LineRow[]): CycleCountView {
  const percent = Number(c.tolerance_percent);
  const value = Number(c.tolerance_value);
  const counted = lines.filter((l) => l.counted !== null).length;
  return {
    id: c.id, object: 'cycle_count', livemode: c.livemode, warehouse_id: c.warehouse_id, count_type: c.count_type, status: c.status,
    progress: { lines: lines.length, counted, remaining: lines.length - counted },
    tolerance: { percent, value },
    classification: c.classification,
    lines: lines.map((l) => ({
      sku: l.sku, location: l.location, abc_class: l.abc_class, expected: l.expected, counted: l.counted,
      movements_during: l.movements_during, variance: l.variance,
      variance_value: l.variance === null ? null : Math.abs(l.variance) * Number(l.unit_value),
      exceeds_tolerance: exceeds(l, percent, value), adjusted: l.adjusted,
    })),
    deadline: c.deadline, overdue: c.overdue_at !== null, approved_by: c.approved_by, workflow_id: c.workflow_id,
    created_at: c.created_at, updated_at: c.updated_at, completed_at: c.completed_at,
  };
}

async function load(em: EntityManager, scope: Scope, id: string, lock = false): Promise<{ count: CountRow; lines: LineRow[] } | null> {
  const rows = await em.execute<CountRow[]>(
    `select ${COLUMNS} from cycle_counts where account_id = ? and livemode = ? and id = ? ${lock ? 'for update' : ''}`, [scope.accountId, scope.livemode, id]);
  if (!rows[0]) return null;
  const lines = await em.execute<LineRow[]>(
    `select sku, location, abc_class, expected, counted, movements_during, variance, unit_value, adjusted
       from cycle_count_lines where cycle_count_id = ? order by location nulls last, sku`, [id]);
  return { count: rows[0], lines };
}

export async function getCycleCount(em: EntityManager, scope: Scope, id: string): Promise<CycleCountView> {
  const found = await load(em, scope, id);
  if (!found) throw notFound('cycle count', id);
  return view(found.count, found.lines);
}

export interface CycleCountFilters {
  warehouseId?: string | undefined;
  status?: CycleCountView['status'] | undefined;
}

/** One page of the scope's cycle counts (`limit + 1` rows), each with its lines, by id in `direction`. */
export async function listCycleCounts(
  em: EntityManager, scope: Scope, filters: CycleCountFilters, page: { after?: string | undefined; limit: number; direction: 'asc' | 'desc' },
): Promise<CycleCountView[]> {
  const rows = await em.execute<CountRow[]>(
    `select ${COLUMNS} from cycle_counts where account_id = ? and livemode = ?
        ${filters.warehouseId ? 'and warehouse_id = ?' : ''} ${filters.status ? 'and status = ?' : ''}
        ${page.after ? `and id ${page.direction === 'desc' ? '<' : '>'} ?` : ''}
      order by id ${page.direction} limit ?`,
    [scope.accountId, scope.livemode, ...(filters.warehouseId ? [filters.warehouseId] : []), ...(filters.status ? [filters.status] : []),
      ...(page.after ? [page.after] : []), page.limit + 1]);
  if (!rows.length) return [];
  const lines = await em.execute<(LineRow & { cycle_count_id: string })[]>(
    `select cycle_count_id, sku, location, abc_class, expected, counted, movements_during, variance, unit_value, adjusted
       from cycle_count_lines where cycle_count_id in (select jsonb_array_elements_text(?::jsonb)) order by location nulls last, sku`,
    [JSON.stringify(rows.map((r) => r.id))]);
  const byCount = Map.groupBy(lines, (l) => l.cycle_count_id);
  return rows.map((r) => view(r, (byCount.get(r.id) ?? []).map(({ cycle_count_id: _, ...l }) => l)));
}

/**
 * ABC classification of a warehouse's SKUs by consumption value over the last 12 months: units
 * shipped (`order_fulfillment` movements of this warehouse) × the product's price, in descending
 * order; A until 80 % of the total, B until 95 %, C the rest (and every SKU with no consumption).
 * A SKU is due when its class's interval has passed since its last completed count (or it never was).
 */
export async function classify(em: EntityManager, scope: Scope, warehouseId: string, policy: AbcPolicy): Promise<Classification> {
  const rows = await em.execute<{ sku: string; value: string; last_counted_at: string | null; overdue_days: number | null }[]>(
    `with cons as (
       select sku, sum(quantity_before - quantity_after) as units from stock_movements
        where account_id = ? and livemode = ? and warehouse_id = ? and reason = 'order_fulfillment' and created_at > now() - interval '12 months'
        group by sku),
     price as (select sku, max(price) as price from products where account_id = ? and livemode = ? group by sku),
     lc as (
       select l.sku, max(l.counted_at) as at from cycle_count_lines l join cycle_counts c on c.id = l.cycle_count_id
        where c.account_id = ? and c.livemode = ? and c.warehouse_id = ? and c.status = 'completed' and l.counted is not null group by l.sku)
     select lv.sku, (coalesce(cons.units, 0) * coalesce(price.price, 0))::text as value, ${iso('lc.at')} as last_counted_at,
            extract(epoch from now() - lc.at)::float / 86400 as overdue_days
       from inventory_levels lv left join cons on cons.sku = lv.sku left join price on price.sku = lv.sku left join lc on lc.sku = lv.sku
      where lv.account_id = ? and lv.livemode = ? and lv.warehouse_id = ?
      order by coalesce(cons.units, 0) * coalesce(price.price, 0) desc, lv.sku`,
    [scope.accountId, scope.livemode, warehouseId, scope.accountId, scope.livemode, scope.accountId, scope.livemode, warehouseId,
      scope.accountId, scope.livemode, warehouseId]);
  const total = rows.reduce((s, r) => s + Number(r.value), 0);
  let before = 0;
  return rows.map((r) => {
    const value = Number(r.value);
    const share = total > 0 ? (before / total) * 100 : 100;
    before += value;
    const abc = value > 0 && share < ABC_SHARES.a ? 'A' : value > 0 && share < ABC_SHARES.b ? 'B' : 'C';
    const interval = abc === 'A' ? policy.a_days : abc === 'B' ? policy.b_days : policy.c_days;
    return {
      sku: r.sku, abc_class: abc, consumption_value: value, share_percent: total > 0 ? Math.round((value / total) * 10000) / 100 : 0,
      last_counted_at: r.last_counted_at, due: r.overdue_days === null || r.overdue_days >= interval,
    };
  });
}

/** The workflow's first step: writes the count and freezes the expected quantities (idempotent by id). */
export async function createCycleCountRow(em: EntityManager, scope: Scope, draft: CycleCountDraft): Promise<CycleCountView> {
  return em.transactional(async (tx) => {
    const existing = await load(tx, scope, draft.countId);
    if (existing) return view(existing.count, existing.lines);
    let lines: { sku: string; abc_class: string | null }[];
    let classification: Classification | null = null;
    if (draft.countType === 'abc_analysis') {
      classification = await classify(tx, scope, draft.warehouseId, draft.abc);
      lines = classification.filter((c) => c.due).map((c) => ({ sku: c.sku, abc_class: c.abc_class }));
    } else if (draft.countType === 'partial') {
      lines = draft.skus.map((sku) => ({ sku, abc_class: null }));
    } else {
      lines = (await tx.execute<{ sku: string }[]>('select sku from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ?',
        [scope.accountId, scope.livemode, draft.warehouseId])).map((r) => ({ sku: r.sku, abc_class: null }));
    }
    await tx.execute(
      `insert into cycle_counts (id, account_id, livemode, warehouse_id, count_type, status, snapshot_seq, classification, tolerance_percent,
         tolerance_value, deadline, workflow_id, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, 0, ?::jsonb, ?, ?, ?, ?, now(), now())`,
      [draft.countId, scope.accountId, scope.livemode, draft.warehouseId, draft.countType, lines.length ? 'counting' : 'completed',
        classification ? JSON.stringify(classification) : null, draft.tolerancePercent, draft.toleranceValue, draft.deadline,
        cycleCountWorkflowId(draft.countId)]);
    // One statement, one snapshot: the quantities and the ledger position they correspond to. A change
    // committed but not yet numbered is taken out of the quantity: its number will be above the position.
    await tx.execute(
      `with seq as (select coalesce((select last_seq from stock_sequences where account_id = ? and livemode = ?), 0) as s),
       ins as (
         insert into cycle_count_lines (cycle_count_id, sku, location, abc_class, expected, unit_value)
         select ?, l.sku, l.location, t.abc_class,
                l.quantity - coalesce((select sum(m.quantity_after - m.quantity_before) from stock_movements m
                                        where m.account_id = l.account_id and m.livemode = l.livemode and m.seq is null
                                          and m.warehouse_id = l.warehouse_id and m.sku = l.sku), 0),
                coalesce((select max(price) from products p where p.account_id = l.account_id and p.livemode = l.livemode and p.sku = l.sku), 0)
           from inventory_levels l join jsonb_to_recordset(?::jsonb) as t(sku text, abc_class text) on t.sku = l.sku
          where l.account_id = ? and l.livemode = ? and l.warehouse_id = ?
         returning 1)
       update cycle_counts set snapshot_seq = (select s from seq) where id = ? and (select count(*) from ins) >= 0`,
      [scope.accountId, scope.livemode, draft.countId, JSON.stringify(lines), scope.accountId, scope.livemode, draft.warehouseId, draft.countId]);
    if (!lines.length) recordCompleted(tx, scope, (await load(tx, scope, draft.countId))!, draft.requestId);
    await tx.flush();
    const created = (await load(tx, scope, draft.countId))!;
    return view(created.count, created.lines);
  });
}

function recordCompleted(tx: EntityManager, scope: Scope, loaded: { count: CountRow; lines: LineRow[] }, requestId: string | null): void {
  recordEvent(tx, scope, { type: 'cycle_count.completed', object: view({ ...loaded.count, status: 'completed' }, loaded.lines), requestId });
}

async function locked(tx: EntityManager, scope: Scope, id: string) {
  const found = await load(tx, scope, id, true);
  if (!found) throw notFound('cycle count', id);
  return found;
}

const wrongState = (c: CountRow, action: string) =>
  conflict('invalid_state_transition', `Cycle count ${c.id} is ${c.status}; it cannot ${action}.`, 'Fetch the cycle count to see its status.', { current_state: c.status });

/**
 * Records counted quantities (a recount replaces the line's count). When every line is counted:
 * within tolerance, the adjustments post and the count completes; beyond it, it waits for approval.
 */
export async function recordCountLines(
  em: EntityManager, scope: Scope, id: string, counts: { sku: string; quantity: number }[], actor: Actor,
): Promise<CycleCountView> {
  return em.transactional(async (tx) => {
    const { count } = await locked(tx, scope, id);
    if (count.status !== 'counting') throw wrongState(count, 'take counts');
    // Every change committed before the count is numbered now; the counter stays locked until this
    // transaction ends, so the movements up to that number are exactly the ones before the count.
    const [position] = await tx.execute<{ last_seq: string }[]>('select last_seq from bp_sequence_stock(?, ?)', [scope.accountId, scope.livemode]);
    await tx.execute(
      `with cur as (select ?::bigint as s)
       update cycle_count_lines l set counted = t.q, counted_at = now(), count_seq = cur.s, movements_during = mv.d, variance = t.q - (l.expected + mv.d)
         from jsonb_to_recordset(?::jsonb) as t(sku text, q int) cross join cur
         cross join lateral (
           select coalesce(sum(m.quantity_after - m.quantity_before), 0)::int as d from stock_movements m
            where m.account_id = ? and m.livemode = ? and m.warehouse_id = ? and m.sku = t.sku and m.seq > ? and m.seq <= cur.s) mv
        where l.cycle_count_id = ? and l.sku = t.sku`,
      [position!.last_seq, JSON.stringify(counts.map((c) => ({ sku: c.sku, q: c.quantity }))), scope.accountId, scope.livemode,
        count.warehouse_id, count.snapshot_seq, id]);
    await tx.execute('update cycle_counts set updated_at = now() where id = ?', [id]);
    const after = (await load(tx, scope, id))!;
    if (after.lines.every((l) => l.counted !== null)) {
      const v = view(after.count, after.lines);
      if (v.lines.some((l) => l.exceeds_tolerance)) {
        await tx.execute(`update cycle_counts set status = 'pending_approval', updated_at = now() where id = ?`, [id]);
      } else {
        await post(tx, scope, after, actor, null);
      }
    }
    const final = (await load(tx, scope, id))!;
    return view(final.count, final.lines);
  });
}

/** Posts every counted line's variance to the ledger in one transaction; the count completes. */
async function post(tx: EntityManager, scope: Scope, loaded: { count: CountRow; lines: LineRow[] }, actor: Actor, approvedBy: string | null): Promise<void> {
  const { count, lines } = loaded;
  const varied = lines.filter((l) => l.counted !== null && l.variance !== null && l.variance !== 0);
  const adjusted = new Map<string, { before: number; after: number; delta: number }>();
  if (varied.length) {
    // A shortfall never takes on-hand below what open orders hold reserved: the rest stays unposted (documented).
    const levels = await tx.execute<{ sku: string; quantity: number; reserved: number }[]>(
      `select sku, quantity, reserved from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ?
          and sku in (select jsonb_array_elements_text(?::jsonb)) order by sku for update`,
      [scope.accountId, scope.livemode, count.warehouse_id, JSON.stringify(varied.map((l) => l.sku))]);
    const bySku = new Map(levels.map((l) => [l.sku, l]));
    for (const l of varied) {
      const level = bySku.get(l.sku)!;
      const delta = Math.max(l.variance!, level.reserved - level.quantity);
      adjusted.set(l.sku, { before: level.quantity, after: level.quantity + delta, delta });
    }
    await moveStock(tx, scope, [...adjusted].filter(([, a]) => a.delta !== 0).map(([sku, a]) => ({ warehouse_id: count.warehouse_id, sku, quantity: a.delta })),
      { reason: 'cycle_count', reference: count.id, actor: actor.actor, requestId: actor.requestId });
  }
  await tx.execute(
    `update cycle_count_lines l set adjusted = coalesce(t.delta, 0)
       from (select l2.sku, x.delta from cycle_count_lines l2 left join jsonb_to_recordset(?::jsonb) as x(sku text, delta int) on x.sku = l2.sku
              where l2.cycle_count_id = ? and l2.counted is not null) t
      where l.cycle_count_id = ? and l.sku = t.sku`,
    [JSON.stringify([...adjusted].map(([sku, a]) => ({ sku, delta: a.delta }))), count.id, count.id]);
  await tx.execute(`update cycle_counts set status = 'completed', completed_at = now(), updated_at = now(), approved_by = coalesce(?, approved_by) where id = ?`,
    [approvedBy, count.id]);
  const done = (await load(tx, scope, count.id))!;
  const changed = [...adjusted].filter(([, a]) => a.delta !== 0);
  if (changed.length) {
    recordEvent(tx, scope, {
      type: 'inventory.adjusted', requestId: actor.requestId,
      object: {
        object: 'inventory_adjustment', livemode: scope.livemode, warehouse_id: count.warehouse_id, cycle_count_id: count.id,
        lines: changed.map(([sku, a]) => ({ sku, quantity_before: a.before, quantity_after: a.after, adjusted: a.delta })),
        created_at: new Date().toISOString(),
      },
    });
  }
  recordCompleted(tx, scope, done, actor.requestId);
  await tx.flush();
}

/** Approval of variances beyond tolerance: every adjustment posts. */
export async function approveCycleCountRow(em: EntityManager, scope: Scope, id: string, input: Actor & { note: string | null }): Promise<CycleCountView> {
  return em.transactional(async (tx) => {
    const loaded = await locked(tx, scope, id);
    if (loaded.count.status === 'completed') return view(loaded.count, loaded.lines);
    if (loaded.count.status !== 'pending_approval') throw wrongState(loaded.count, 'be approved');
    await tx.execute('update cycle_counts set approval_note = ? where id = ?', [input.note, id]);
    await post(tx, scope, loaded, input, input.actor);
    const done = (await load(tx, scope, id))!;
    return view(done.count, done.lines);
  });
}

/** Operations: force-close (post the lines counted so far) or abort (post nothing). */
export async function closeCycleCountRow(em: EntityManager, scope: Scope, id: string, input: CloseInput): Promise<CycleCountView> {
  return em.transactional(async (tx) => {
    const loaded = await locked(tx, scope, id);
    if (loaded.count.status === 'completed' || loaded.count.status === 'cancelled') return view(loaded.count, loaded.lines);
    if (input.mode === 'force_close') {
      await post(tx, scope, loaded, input, input.actor);
    } else {
      await tx.execute(`update cycle_counts set status = 'cancelled', cancellation_reason = ?, updated_at = now() where id = ?`, [input.reason, id]);
    }
    const done = (await load(tx, scope, id))!;
    return view(done.count, done.lines);
  });
}

/** The deadline passed with the count unfinished: `cycle_count.overdue`, once. */
export async function markCycleCountOverdue(em: EntityManager, scope: Scope, id: string): Promise<CycleCountView> {
  return em.transactional(async (tx) => {
    const loaded = await locked(tx, scope, id);
    if (loaded.count.overdue_at !== null || !['counting', 'pending_approval'].includes(loaded.count.status)) return view(loaded.count, loaded.lines);
    await tx.execute('update cycle_counts set overdue_at = now(), updated_at = now() where id = ?', [id]);
    const after = (await load(tx, scope, id))!;
    const v = view(after.count, after.lines);
    recordEvent(tx, scope, { type: 'cycle_count.overdue', object: v });
    await tx.flush();
    return v;
  });
}

// ---- the API's side ----

export interface CycleCountInput {
  warehouse_id: string;
  count_type: CycleCountView['count_type'];
  skus?: string[];
  tolerance?: { percent?: number; value?: number };
  abc?: Partial<AbcPolicy>;
  deadline?: string;
  /** Sandbox: the count's deadline runs on a frozen clock starting here (the default deadline counts from it). */
  test_clock_time?: Date;
}

const ctxFor = (em: EntityManager, scope: Scope, id: string) => ({
  resource: `Cycle count ${id}`,
  suggestion: 'Fetch the cycle count to see its status and progress.',
  currentState: async () => (await load(em.fork(), scope, id))?.count.status ?? 'unknown',
});

/** `POST /v3/warehouses/cycle-count`: checks the input (422), then starts `cycle-count-<id>`. */
export async function startCycleCount(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, input: CycleCountInput, actor: Actor): Promise<CycleCountView> {
  const existing = await load(em, scope, id);
  if (existing) return view(existing.count, existing.lines);
  const testClockStart = sandboxClockOnly(scope, input.test_clock_time);
  await requireWarehouse(em, scope, input.warehouse_id, 'warehouse_id');
  const skus = input.skus ?? [];
  if (input.count_type === 'partial') {
    if (!skus.length) throw validationFailed([{ path: 'skus', message: 'a partial count names the SKUs to count' }]);
    const stocked = new Set((await em.execute<{ sku: string }[]>(
      'select sku from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ? and sku in (select jsonb_array_elements_text(?::jsonb))',
      [scope.accountId, scope.livemode, input.warehouse_id, JSON.stringify(skus)])).map((r) => r.sku));
    const errors = skus.flatMap((sku, i) => [
      ...(skus.indexOf(sku) !== i ? [{ path: `skus.${i}`, message: `'${sku}' is listed twice` }] : []),
      ...(!stocked.has(sku) ? [{ path: `skus.${i}`, message: `'${sku}' is not stocked in warehouse ${input.warehouse_id}; count only SKUs it holds` }] : []),
    ]);
    if (errors.length) throw validationFailed(errors);
  } else if (skus.length) {
    throw validationFailed([{ path: 'skus', message: `only a partial count takes skus; a ${input.count_type} count chooses its own` }]);
  }
  const deadline = input.deadline ?? new Date((testClockStart ?? Date.now()) + DEFAULT_DEADLINE_DAYS * 86_400_000).toISOString();
  const draft: CycleCountDraft = {
    countId: id, accountId: scope.accountId, livemode: scope.livemode, warehouseId: input.warehouse_id, countType: input.count_type, skus,
    tolerancePercent: input.tolerance?.percent ?? DEFAULT_TOLERANCE.percent, toleranceValue: input.tolerance?.value ?? DEFAULT_TOLERANCE.value,
    abc: { ...DEFAULT_ABC, ...input.abc }, deadline, testClockStart, ...actor,
  };
  return sendUpdate(() => startResource<typeof cycleCountWorkflow, CycleCountView, []>(temporal, {
    workflowType: 'cycleCountWorkflow', workflowId: cycleCountWorkflowId(id), taskQueue: temporal.taskQueue('warehouses'),
    args: [draft],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: id, status: 'counting' }),
    update: cycleCountCreatedUpdate, updateArgs: [],
  }), ctxFor(em, scope, id));
}

export type CycleCountAction =
  | { kind: 'counts'; counts: { sku: string; quantity: number }[] }
  | { kind: 'approve'; note: string | null }
  | { kind: 'close'; mode: CloseInput['mode']; reason: string };

export async function actOnCycleCount(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, action: CycleCountAction, actor: Actor): Promise<CycleCountView> {
  const c = await getCycleCount(em, scope, id);
  const handle = temporal.client.workflow.getHandle(c.workflow_id);
  return sendUpdate(() => {
    switch (action.kind) {
      case 'counts': return handle.executeUpdate(recordCountsUpdate, { args: [{ ...actor, counts: action.counts }] });
      case 'approve': return handle.executeUpdate(approveCycleCountUpdate, { args: [{ ...actor, note: action.note }] });
      case 'close': return handle.executeUpdate(closeCycleCountUpdate, { args: [{ ...actor, mode: action.mode, reason: action.reason }] });
    }
  }, ctxFor(em, scope, id));
}

/** Sandbox: moves the count's test clock to `to`; answers with the count once its deadline check ran on the new time. */
export async function advanceCycleCountClock(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, to: Date): Promise<CycleCountView> {
  const c = await getCycleCount(em, scope, id);
  sandboxClockOnly(scope, to);
  await sendUpdate(() => temporal.client.workflow.getHandle(c.workflow_id).executeUpdate(advanceCycleCountClockUpdate, { args: [{ to: to.getTime() }] }), ctxFor(em, scope, id));
  return getCycleCount(em.fork(), scope, id);
}
