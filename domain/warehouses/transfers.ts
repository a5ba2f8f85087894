import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { applicationFailureOf, searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { refusalDetails } from '../../workflows/kit/failures.ts';
import type { transferWorkflow } from '../../workflows/warehouses/transfer.ts';
import {
  advanceTransferClockUpdate, cancelTransferUpdate, dispatchTransferUpdate, receiveTransferUpdate, transferCreatedUpdate, transferWorkflowId,
  type Actor, type ReceiveInput, type TransferDraft, type TransferItem,
} from '../../workflows/warehouses/shared.ts';
import { moveStock } from '../commerce/public.ts';
import { recordEvent } from '../events/outbox.ts';
import type { Scope } from '../scope.ts';
import { iso, requireWarehouse, sandboxClockOnly, unknownSkus } from './inventory.ts';
import type { TransferView } from './schemas.ts';

/**
 * Transfers between two warehouses of an account, one workflow each (workflows/warehouses/transfer.ts).
 * The row and the stock change together in each step's transaction, under the row's lock; the
 * movements ledger records each with the transfer as reference.
 */

interface TransferRow {
  id: string;
  livemode: boolean;
  reference: string;
  from_warehouse: string;
  to_warehouse: string;
  status: TransferView['status'];
  items: { sku: string; quantity: number; received: number }[];
  expected_arrival: string | null;
  carrier: string | null;
  workflow_id: string;
  delayed_at: string | null;
  dispatched_at: string | null;
  received_at: string | null;
  cancelled_at: string | null;
  cancellation_reason: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `id, livemode, reference, from_warehouse, to_warehouse, status, items, to_char(expected_arrival, 'YYYY-MM-DD') as expected_arrival,
  carrier, workflow_id, ${iso('delayed_at')} as delayed_at, ${iso('dispatched_at')} as dispatched_at, ${iso('received_at')} as received_at,
  ${iso('cancelled_at')} as cancelled_at, cancellation_reason, ${iso('created_at')} as created_at, ${iso('updated_at')} as updated_at`;

function view(r: TransferRow): TransferView {
  return {
    id: r.id, object: 'warehouse_transfer', livemode: r.livemode, reference: r.reference, from_warehouse: r.from_warehouse,
    to_warehouse: r.to_warehouse, status: r.status,
    items: r.items.map((i) => ({ sku: i.sku, quantity: i.quantity, received: i.received, outstanding: r.status === 'cancelled' ? 0 : i.quantity - i.received })),
    expected_arrival: r.expected_arrival, carrier: r.carrier, delayed: r.delayed_at !== null, workflow_id: r.workflow_id,
    dispatched_at: r.dispatched_at, received_at: r.received_at, cancelled_at: r.cancelled_at, cancellation_reason: r.cancellation_reason,
    created_at: r.created_at, updated_at: r.updated_at,
  };
}

async function row(em: EntityManager, scope: Scope, where: 'id' | 'reference', value: string, lock = false): Promise<TransferView | null> {
  const rows = await em.execute<TransferRow[]>(
    `select ${COLUMNS} from warehouse_transfers where account_id = ? and livemode = ? and ${where} = ? ${lock ? 'for update' : ''}`,
    [scope.accountId, scope.livemode, value]);
  return rows[0] ? view(rows[0]) : null;
}

export async function getTransfer(em: EntityManager, scope: Scope, id: string): Promise<TransferView> {
  const found = await row(em, scope, 'id', id);
  if (!found) throw notFound('transfer', id);
  return found;
}

export async function listTransfers(em: EntityManager, scope: Scope, page: { after?: string; limit: number; direction: 'asc' | 'desc' }): Promise<TransferView[]> {
  const rows = await em.execute<TransferRow[]>(
    `select ${COLUMNS} from warehouse_transfers where account_id = ? and livemode = ? ${page.after ? `and id ${page.direction === 'desc' ? '<' : '>'} ?` : ''}
      order by id ${page.direction} limit ?`,
    [scope.accountId, scope.livemode, ...(page.after ? [page.after] : []), page.limit + 1]);
  return rows.map(view);
}

// ---- the workflow's steps (activities) ----

/** Writes the transfer and reserves its units at the source; idempotent by id. */
export async function createTransferRow(em: EntityManager, scope: Scope, draft: TransferDraft): Promise<TransferView> {
  return em.transactional(async (tx) => {
    const existing = await row(tx, scope, 'id', draft.transferId);
    if (existing) return existing;
    const inserted = await tx.execute<{ id: string }[]>(
      `insert into warehouse_transfers (id, account_id, livemode, reference, from_warehouse, to_warehouse, status, items, expected_arrival,
         carrier, workflow_id, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, 'reserved', ?::jsonb, ?::date, ?, ?, now(), now())
       on conflict (account_id, livemode, reference) do nothing returning id`,
      [draft.transferId, scope.accountId, scope.livemode, draft.reference, draft.fromWarehouse, draft.toWarehouse,
        JSON.stringify(draft.items.map((i) => ({ ...i, received: 0 }))), draft.expectedArrival, draft.carrier, transferWorkflowId(draft.transferId)]);
    if (!inserted.length) {
      const other = (await row(tx, scope, 'reference', draft.reference))!;
      throw conflict('transfer_reference_exists', `Transfer ${other.id} already has the reference '${draft.reference}'.`,
        'Use that transfer (the same reference always names it), or choose another reference.', { transfer_id: other.id });
    }
    await moveStock(tx, scope, draft.items.map((i) => ({ warehouse_id: draft.fromWarehouse, sku: i.sku, reserved: i.quantity })),
      { reason: 'transfer_reservation', reference: draft.transferId, actor: draft.actor, requestId: draft.requestId });
    return (await row(tx, scope, 'id', draft.transferId))!;
  });
}

async function locked(tx: EntityManager, scope: Scope, id: string): Promise<TransferView> {
  const t = await row(tx, scope, 'id', id, true);
  if (!t) throw notFound('transfer', id);
  return t;
}

const wrongState = (t: TransferView, action: string) =>
  conflict('invalid_state_transition', `Transfer ${t.id} is ${t.status}; it cannot be ${action}.`, 'Fetch the transfer to see its status.', { current_state: t.status });

/** The units leave the source (on hand and reserved drop) and show as in transit at the destination. */
export async function dispatchTransferRow(em: EntityManager, scope: Scope, id: string, actor: Actor): Promise<TransferView> {
  return em.transactional(async (tx) => {
    const t = await locked(tx, scope, id);
    if (t.status !== 'reserved') {
      if (t.dispatched_at) return t; // a retry after the commit
      throw wrongState(t, 'dispatched');
    }
    await moveStock(tx, scope, t.items.flatMap((i) => [
      { warehouse_id: t.from_warehouse, sku: i.sku, quantity: -i.quantity, reserved: -i.quantity },
      { warehouse_id: t.to_warehouse, sku: i.sku, in_transit: i.quantity },
    ]), { reason: 'transfer_dispatch', reference: id, ...actor });
    await tx.execute(`update warehouse_transfers set status = 'in_transit', dispatched_at = now(), updated_at = now() where id = ?`, [id]);
    return (await row(tx, scope, 'id', id))!;
  });
}

/** A receipt: units move from in transit to on hand at the destination; idempotent by receipt id. */
export async function receiveTransferRow(em: EntityManager, scope: Scope, id: string, input: ReceiveInput): Promise<TransferView> {
  return em.transactional(async (tx) => {
    const t = await locked(tx, scope, id);
    const seen = await tx.execute('select 1 from warehouse_transfer_receipts where id = ?', [input.receiptId]);
    if (seen.length) return t;
    if (t.status !== 'in_transit' && t.status !== 'partially_received') throw wrongState(t, 'received');
    const errors: FieldError[] = [];
    const items = t.items.map((i) => ({ sku: i.sku, quantity: i.quantity, received: i.received }));
    input.items.forEach((r, n) => {
      const line = items.find((i) => i.sku === r.sku);
      if (!line) errors.push({ path: `items.${n}.sku`, message: `'${r.sku}' is not on this transfer` });
      else if (line.received + r.quantity > line.quantity) errors.push({ path: `items.${n}.quantity`, message: `over-receipt: ${line.quantity - line.received} units of '${r.sku}' are outstanding` });
      else line.received += r.quantity;
    });
    if (errors.length) throw validationFailed(errors);
    await moveStock(tx, scope, input.items.filter((r) => r.quantity > 0).map((r) => ({ warehouse_id: t.to_warehouse, sku: r.sku, in_transit: -r.quantity, quantity: r.quantity })),
      { reason: 'transfer_receipt', reference: id, actor: input.actor, requestId: input.requestId });
    const complete = items.every((i) => i.received === i.quantity);
    await tx.execute(
      `update warehouse_transfers set items = ?::jsonb, status = ?, received_at = case when ? then now() else received_at end, updated_at = now() where id = ?`,
      [JSON.stringify(items), complete ? 'received' : 'partially_received', complete, id]);
    await tx.execute(`insert into warehouse_transfer_receipts (id, transfer_id, items, created_at) values (?, ?, ?::jsonb, now())`,
      [input.receiptId, id, JSON.stringify(input.items)]);
    return (await row(tx, scope, 'id', id))!;
  });
}

/** Cancels a transfer not yet dispatched: the reservation at the source is released. */
export async function cancelTransferRow(em: EntityManager, scope: Scope, id: string, input: Actor & { reason: string | null }): Promise<TransferView> {
  return em.transactional(async (tx) => {
    const t = await locked(tx, scope, id);
    if (t.status === 'cancelled') return t;
    if (t.status !== 'reserved') throw wrongState(t, 'cancelled');
    await moveStock(tx, scope, t.items.map((i) => ({ warehouse_id: t.from_warehouse, sku: i.sku, reserved: -i.quantity })),
      { reason: 'transfer_cancellation', reference: id, actor: input.actor, requestId: input.requestId });
    await tx.execute(`update warehouse_transfers set status = 'cancelled', cancelled_at = now(), cancellation_reason = ?, updated_at = now() where id = ?`, [input.reason, id]);
    return (await row(tx, scope, 'id', id))!;
  });
}

/** The expected arrival passed: `warehouse.transfer.delayed`, once. */
export async function markTransferDelayed(em: EntityManager, scope: Scope, id: string): Promise<TransferView> {
  return em.transactional(async (tx) => {
    const t = await locked(tx, scope, id);
    if (t.delayed || t.status === 'received' || t.status === 'cancelled') return t;
    await tx.execute('update warehouse_transfers set delayed_at = now(), updated_at = now() where id = ?', [id]);
    const after = (await row(tx, scope, 'id', id))!;
    recordEvent(tx, scope, { type: 'warehouse.transfer.delayed', object: after });
    await tx.flush();
    return after;
  });
}

// ---- the API's side ----

export interface TransferInput {
  from_warehouse: string;
  to_warehouse: string;
  items: TransferItem[];
  reference: string;
  expected_arrival?: string;
  carrier?: string;
  /** Sandbox: the transfer's delay timer runs on a frozen clock starting here. */
  test_clock_time?: Date;
}

const ctxFor = (em: EntityManager, scope: Scope, id: string) => ({
  resource: `Transfer ${id}`,
  suggestion: 'Fetch the transfer to see its current status.',
  currentState: async () => (await row(em.fork(), scope, 'id', id))?.status ?? 'unknown',
});

/**
 * `PUT /v3/warehouses/transfer`: the transfer with this reference, created (and its units
 * reserved at the source) if there is none yet. Checks the input first (422 naming every field).
 */
export async function putTransfer(
  temporal: TemporalHandle, em: EntityManager, scope: Scope, transferId: string, input: TransferInput, actor: Actor,
): Promise<{ transfer: TransferView; created: boolean }> {
  const existing = await row(em, scope, 'reference', input.reference);
  if (existing) return { transfer: existing, created: false };
  const testClockStart = sandboxClockOnly(scope, input.test_clock_time);
  const errors: FieldError[] = [];
  if (input.from_warehouse === input.to_warehouse) errors.push({ path: 'to_warehouse', message: 'a transfer moves stock between two different warehouses' });
  for (const field of ['from_warehouse', 'to_warehouse'] as const) {
    try {
      await requireWarehouse(em, scope, input[field], field);
    } catch (err) {
      if (err instanceof ApiError && err.errors) errors.push(...err.errors);
      else throw err;
    }
  }
  const seen = new Set<string>();
  input.items.forEach((item, i) => {
    if (seen.has(item.sku)) errors.push({ path: `items.${i}.sku`, message: `'${item.sku}' is listed twice; send one line per SKU` });
    seen.add(item.sku);
  });
  const unknown = new Set(await unknownSkus(em, scope, [...seen]));
  input.items.forEach((item, i) => {
    if (unknown.has(item.sku)) errors.push({ path: `items.${i}.sku`, message: `no product with SKU '${item.sku}' in this account and mode` });
  });
  if (errors.length) throw validationFailed(errors);

  const draft: TransferDraft = {
    transferId, accountId: scope.accountId, livemode: scope.livemode, reference: input.reference,
    fromWarehouse: input.from_warehouse, toWarehouse: input.to_warehouse, items: input.items,
    expectedArrival: input.expected_arrival ?? null, carrier: input.carrier ?? null, testClockStart, ...actor,
  };
  try {
    const transfer = await startResource<typeof transferWorkflow, TransferView, []>(temporal, {
      workflowType: 'transferWorkflow', workflowId: transferWorkflowId(transferId), taskQueue: temporal.taskQueue('warehouses'),
      args: [draft],
      searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: transferId, status: 'reserved' }),
      update: transferCreatedUpdate, updateArgs: [],
    });
    return { transfer, created: true };
  } catch (err) {
    // The same reference, created by a concurrent request first: that transfer is the answer.
    const failure = err instanceof WorkflowUpdateFailedError ? applicationFailureOf(err) : undefined;
    if (failure && refusalDetails(failure).code === 'transfer_reference_exists') {
      const other = await row(em.fork(), scope, 'reference', input.reference);
      if (other) return { transfer: other, created: false };
    }
    return sendUpdate(() => Promise.reject(err), ctxFor(em, scope, transferId));
  }
}

export type TransferAction =
  | { kind: 'dispatch' }
  | { kind: 'receive'; receiptId: string; items: TransferItem[] }
  | { kind: 'cancel'; reason: string | null };

/** Dispatch, receive or cancel through the transfer's workflow (an update; a refused transition is 409). */
export async function actOnTransfer(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, action: TransferAction, actor: Actor): Promise<TransferView> {
  const t = await getTransfer(em, scope, id);
  const handle = temporal.client.workflow.getHandle(t.workflow_id);
  return sendUpdate(() => {
    switch (action.kind) {
      case 'dispatch': return handle.executeUpdate(dispatchTransferUpdate, { args: [actor] });
      case 'receive': return handle.executeUpdate(receiveTransferUpdate, { args: [{ ...actor, receiptId: action.receiptId, items: action.items }] });
      case 'cancel': return handle.executeUpdate(cancelTransferUpdate, { args: [{ ...actor, reason: action.reason }] });
    }
  }, ctxFor(em, scope, id));
}

/** Sandbox: moves the transfer's test clock to `to`; answers with the transfer once its delay check ran on the new time. */
export async function advanceTransferClock(temporal: TemporalHandle, em: EntityManager, scope: Scope, id: string, to: Date): Promise<TransferView> {
  const t = await getTransfer(em, scope, id);
  sandboxClockOnly(scope, to);
  await sendUpdate(() => temporal.client.workflow.getHandle(t.workflow_id).executeUpdate(advanceTransferClockUpdate, { args: [{ to: to.getTime() }] }), ctxFor(em, scope, id));
  return getTransfer(em.fork(), scope, id);
}
