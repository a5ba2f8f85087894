import type { EntityManager } from '@mikro-orm/postgresql';
import type { WorkflowHandle } from '@temporalio/client';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { searchAttributes, sendUpdate, startResource } from '../../platform/temporal-kit.ts';
import type { TemporalHandle } from '../../platform/temporal.ts';
import { BP_SEARCH_ATTRIBUTES } from '../../workflows/kit/search-attributes.ts';
import type { procurementOrderWorkflow } from '../../workflows/erp/procurement-order.ts';
import {
  ORDER_TRANSITIONS, advanceOrderClockUpdate, approveOrderUpdate, awaitOrderRecordedUpdate, billOrderUpdate, cancelOrderUpdate,
  editItemsUpdate, escalateOrderUpdate, orderStateQuery, procurementOrderWorkflowId, reassignApproverUpdate, receiveOrderUpdate,
  rejectOrderUpdate, submitOrderUpdate, type Actor, type ApproverRole, type OrderItem, type ProcurementOrderInput, type ProcurementOrderView,
  type ProcurementStatus,
} from '../../workflows/erp/shared.ts';
import { Product, Warehouse } from '../commerce/public.ts';
import { convertMinorUnits, exponent } from '../money.ts';
import type { Scope } from '../scope.ts';
import { amountToMinor, requiredApprovals } from './accounting.ts';
import { ProcurementOrder, Project } from './entities.ts';
import { ensureLedger, missingRate, rateOn, type LedgerSettings } from './ledger.ts';
import { orderView } from './procurement-store.ts';
import { findVendor } from './vendors.ts';

/**
 * Purchase orders through their workflows: the API never writes an order row itself. Creation is
 * update-with-start (the workflow's first activity writes the row; the API answers once the order
 * is submitted), every change is an update with a validator (a refused transition is 409, a refused
 * approver 403).
 */
export interface ProcurementContext {
  em: EntityManager;
  temporal: TemporalHandle;
}

export interface ItemInput {
  sku?: string | undefined;
  description?: string | undefined;
  quantity: number;
  /** Decimal major units. */
  unit_price: number;
  currency: string;
}

export interface CreateOrderInput {
  orderId: string;
  vendorId: string;
  items: ItemInput[];
  approvalRequired: boolean;
  /** false: keep the order a draft until submitOrder. */
  submit: boolean;
  warehouseId: string | null;
  projectId: string | null;
  testClockTime: Date | null;
  metadata: Record<string, string>;
  requestId: string | null;
}

/** Largest order line or total, in minor units: fits a bigint and stays exact. */
const MAX_TOTAL = Number.MAX_SAFE_INTEGER;

/** Items as the workflow keeps them, their total and base-currency total; every bad field named at once. */
async function priceItems(
  em: EntityManager, ledger: LedgerSettings, items: ItemInput[], errors: FieldError[], currencyFixed?: string, rateFixed?: string,
): Promise<{ items: OrderItem[]; currency: string; total: number; baseTotal: number; rate: string }> {
  const currency = currencyFixed ?? items[0]?.currency ?? ledger.baseCurrency;
  const priced: OrderItem[] = [];
  let total = 0;
  items.forEach((item, i) => {
    if (item.currency !== currency) {
      errors.push({ path: `items.${i}.currency`, message: `every item of an order is in one currency; item 0 is ${currency}, this one ${item.currency}` });
    }
    if (!item.sku && !item.description) errors.push({ path: `items.${i}`, message: 'give each item a sku (stocked goods) or a description (services, non-stock goods)' });
    const unit = amountToMinor(item.unit_price, currency);
    if (unit === null) {
      errors.push({ path: `items.${i}.unit_price`, message: `${currency} amounts carry at most ${exponent(currency)} decimals; round ${item.unit_price} to that` });
      return;
    }
    const amount = unit * item.quantity;
    if (!Number.isSafeInteger(amount) || amount > MAX_TOTAL) {
      errors.push({ path: `items.${i}.quantity`, message: 'quantity × unit_price is too large' });
      return;
    }
    total += amount;
    priced.push({ line: i + 1, sku: item.sku ?? null, description: item.description ?? null, quantity: item.quantity, unit_price: unit, amount, received: 0 });
  });
  if (total > MAX_TOTAL) errors.push({ path: 'items', message: 'the order total is too large' });
  if (total === 0 && !errors.length) errors.push({ path: 'items', message: 'the order total is zero; a purchase order needs something to pay for' });
  const rate = rateFixed ?? await rateOn(em, ledger.baseCurrency, currency, new Date().toISOString().slice(0, 10));
  if (!rate) errors.push(missingRate('items.0.currency', currency, ledger.baseCurrency, new Date().toISOString().slice(0, 10)));
  const baseTotal = rate && !errors.length ? convertMinorUnits(total, currency, ledger.baseCurrency, rate) : 0;
  return { items: priced, currency, total, baseTotal, rate: rate ?? '1' };
}

/** The receiving warehouse and the SKUs exist in this account and mode (commerce's records), so receipts cannot fail on them later. */
async function checkStockTargets(em: EntityManager, warehouseId: string | null, items: ItemInput[]): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (warehouseId && !(await em.findOne(Warehouse, { id: warehouseId }, { fields: ['id'] }))) {
    errors.push({ path: 'warehouse_id', message: `no warehouse '${warehouseId}' in this account and mode; create it with POST /v3/warehouses` });
  }
  const skus = [...new Set(items.flatMap((i) => (i.sku ? [i.sku] : [])))];
  if (skus.length) {
    const known = new Set((await em.find(Product, { sku: { $in: skus } }, { fields: ['sku'] })).map((p) => p.sku));
    items.forEach((i, n) => {
      if (i.sku && !known.has(i.sku)) errors.push({ path: `items.${n}.sku`, message: `no product with SKU '${i.sku}' in any store of this account and mode` });
    });
  }
  return errors;
}

function rolesFor(ledger: LedgerSettings, baseTotal: number, forced: boolean): ApproverRole[] {
  return requiredApprovals(baseTotal, { singleFrom: ledger.singleApprovalFrom, dualFrom: ledger.dualApprovalFrom }, forced);
}

export async function createProcurementOrder(ctx: ProcurementContext, auth: Scope & { keyId: string }, input: CreateOrderInput): Promise<ProcurementOrderView> {
  const existing = await ctx.em.findOne(ProcurementOrder, { id: input.orderId });
  if (existing) return orderView(existing);
  const scope: Scope = { accountId: auth.accountId, livemode: auth.livemode };
  const ledger = await ensureLedger(ctx.em, scope);
  const errors: FieldError[] = [];
  const vendor = await findVendor(ctx.em, input.vendorId).catch(() => null);
  if (!vendor) errors.push({ path: 'vendor_id', message: `no vendor with id '${input.vendorId}' exists in this account and mode; create it with POST /v3/vendors` });
  if (input.projectId && !(await ctx.em.findOne(Project, { id: input.projectId }))) {
    errors.push({ path: 'project_id', message: `no project with id '${input.projectId}' exists in this account and mode` });
  }
  if (input.items.some((i) => i.sku) && !input.warehouseId) {
    errors.push({ path: 'warehouse_id', message: 'items with a sku are received into stock: name the warehouse_id that receives them' });
  }
  errors.push(...await checkStockTargets(ctx.em, input.warehouseId, input.items));
  if (input.testClockTime && auth.livemode) {
    throw new ApiError({
      status: 403, code: 'test_mode_only', title: 'Forbidden', detail: 'test_clock_time drives an order\'s timers in the sandbox only.',
      suggestion: 'Use a test key (bp_test_…), or omit test_clock_time.',
    });
  }
  const priced = await priceItems(ctx.em, ledger, input.items, errors);
  if (errors.length) throw validationFailed(errors);
  const workflowInput: ProcurementOrderInput = {
    orderId: input.orderId, accountId: scope.accountId, livemode: scope.livemode, vendorId: input.vendorId, currency: priced.currency,
    items: priced.items, total: priced.total, baseTotal: priced.baseTotal, exchangeRate: priced.rate, approvalRequired: input.approvalRequired,
    submit: input.submit, roles: rolesFor(ledger, priced.baseTotal, input.approvalRequired), warehouseId: input.warehouseId, projectId: input.projectId,
    createdBy: auth.keyId, escalationMs: ledger.escalationHours * 3_600_000, escalationLimit: ledger.escalationLimit,
    tolerancePercent: ledger.matchTolerancePercent, testClockStart: input.testClockTime?.getTime() ?? null, metadata: input.metadata,
    requestId: input.requestId,
  };
  return startResource<typeof procurementOrderWorkflow, ProcurementOrderView, []>(ctx.temporal, {
    workflowType: 'procurementOrderWorkflow',
    workflowId: procurementOrderWorkflowId(input.orderId),
    taskQueue: ctx.temporal.taskQueue('erp'),
    args: [workflowInput],
    searchAttributes: searchAttributes({ accountId: scope.accountId, livemode: scope.livemode, resourceId: input.orderId, status: 'draft' }),
    update: awaitOrderRecordedUpdate,
    updateArgs: [],
  });
}

export async function findOrder(em: EntityManager, id: string): Promise<ProcurementOrder> {
  const order = await em.findOne(ProcurementOrder, { id });
  if (!order) throw notFound('procurement order', id);
  return order;
}

export async function getProcurementOrder(em: EntityManager, id: string): Promise<ProcurementOrderView> {
  return orderView(await findOrder(em, id));
}

export async function listProcurementOrders(
  em: EntityManager, filters: { status?: ProcurementStatus[] | undefined; vendorId?: string | undefined },
  page: { where: Record<string, unknown>; direction: 'asc' | 'desc'; limit: number },
): Promise<ProcurementOrderView[]> {
  const rows = await em.find(ProcurementOrder, {
    ...page.where,
    ...(filters.status ? { status: { $in: filters.status } } : {}),
    ...(filters.vendorId ? { vendorId: filters.vendorId } : {}),
  }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(orderView);
}

const SUGGESTION = 'Check the order\'s current status (GET /v3/procurement/orders/{id}) and send an action that status allows.';

/**
 * Sends an update to the order's workflow; a refusal becomes its problem (409 for a transition). A
 * finished order's workflow takes no more updates: a retry of the request that finished it (its
 * Idempotency-Key is in the workflow's applied keys, which a query still reads; or its bill is the
 * order's bill) answers the order, anything else 409.
 */
async function update<T>(ctx: ProcurementContext, id: string, action: keyof typeof ORDER_TRANSITIONS | null,
  send: (h: WorkflowHandle<typeof procurementOrderWorkflow>) => Promise<T>,
  replay: { idempotencyKey?: string | null; billId?: string } = {}): Promise<T | ProcurementOrderView> {
  const order = await findOrder(ctx.em, id);
  if (action && (['rejected', 'closed', 'cancelled'] as string[]).includes(order.status)) {
    if (replay.billId && order.bill?.id === replay.billId) return orderView(order);
    if (replay.idempotencyKey) {
      const live = await ctx.temporal.client.workflow.getHandle(order.workflowId).query(orderStateQuery).catch(() => null);
      if (live?.state.appliedKeys?.includes(replay.idempotencyKey)) return orderView(order);
    }
    throw conflict('invalid_state_transition', `Purchase order ${id} is ${order.status}; it cannot change any more.`, SUGGESTION, { current_state: order.status });
  }
  const handle = ctx.temporal.client.workflow.getHandle<typeof procurementOrderWorkflow>(order.workflowId);
  return sendUpdate(() => send(handle), {
    resource: `Purchase order ${id}`, suggestion: SUGGESTION,
    currentState: async () => (await ctx.em.fork().findOne(ProcurementOrder, { id }, { filters: false }))?.status ?? 'unknown',
  });
}

export function actorOf(auth: { keyId: string; keyType: string; permissions: string[] }): Actor {
  return { keyId: auth.keyId, permissions: auth.keyType === 'restricted' ? auth.permissions : ['*'] };
}

export function approveOrder(ctx: ProcurementContext, id: string, actor: Actor, note: string | null, requestId: string | null, idempotencyKey: string | null = null) {
  return update(ctx, id, 'approve', (h) => h.executeUpdate(approveOrderUpdate, { args: [{ ...actor, note, requestId, idempotencyKey }] }), { idempotencyKey });
}

export function rejectOrder(ctx: ProcurementContext, id: string, actor: Actor, reason: string | null, requestId: string | null, idempotencyKey: string | null = null) {
  return update(ctx, id, 'reject', (h) => h.executeUpdate(rejectOrderUpdate, { args: [{ ...actor, reason, requestId, idempotencyKey }] }), { idempotencyKey });
}

export async function editOrderItems(ctx: ProcurementContext, scope: Scope, id: string, items: ItemInput[], requestId: string | null) {
  const order = await findOrder(ctx.em, id);
  const ledger = await ensureLedger(ctx.em, scope);
  const errors: FieldError[] = [];
  if (items.some((i) => i.sku) && !order.warehouseId) errors.push({ path: 'items', message: 'the order has no warehouse_id, so its items cannot carry a sku' });
  const rate = await rateOn(ctx.em, ledger.baseCurrency, order.currency, new Date().toISOString().slice(0, 10));
  const priced = await priceItems(ctx.em, ledger, items, errors, order.currency, rate ?? undefined);
  if (errors.length) throw validationFailed(errors);
  const roles = rolesFor(ledger, priced.baseTotal, order.approvalRequired);
  return update(ctx, id, 'editItems', (h) => h.executeUpdate(editItemsUpdate, {
    args: [{ items: priced.items, total: priced.total, baseTotal: priced.baseTotal, roles, requestId }],
  }));
}

export async function receiveOrder(
  ctx: ProcurementContext, id: string, receiptId: string, lines: { line: number; quantity: number }[] | null, requestId: string | null,
) {
  const order = await findOrder(ctx.em, id);
  const chosen = lines ?? order.items.filter((i) => i.quantity > i.received).map((i) => ({ line: i.line, quantity: i.quantity - i.received }));
  if (!chosen.some((l) => l.quantity > 0) && ORDER_TRANSITIONS.receive.includes(order.status as never)) {
    throw validationFailed([{ path: 'lines', message: 'nothing to receive: give at least one line with a quantity above 0' }]);
  }
  return update(ctx, id, 'receive', (h) => h.executeUpdate(receiveOrderUpdate, { args: [{ receiptId, lines: chosen, requestId }] }));
}

export async function billOrder(ctx: ProcurementContext, id: string, bill: { billId: string; invoiceNumber: string; amount: number }, requestId: string | null) {
  const order = await findOrder(ctx.em, id);
  const amount = amountToMinor(bill.amount, order.currency);
  if (amount === null) throw validationFailed([{ path: 'amount', message: `more decimals than ${order.currency} allows` }]);
  return update(ctx, id, 'bill', (h) => h.executeUpdate(billOrderUpdate, { args: [{ billId: bill.billId, invoiceNumber: bill.invoiceNumber, amount, requestId }] }),
    { billId: bill.billId });
}

export function submitOrder(ctx: ProcurementContext, id: string, requestId: string | null) {
  return update(ctx, id, 'submit', (h) => h.executeUpdate(submitOrderUpdate, { args: [{ requestId }] }));
}

export function cancelOrder(ctx: ProcurementContext, id: string, reason: string, requestId: string | null, idempotencyKey: string | null = null) {
  return update(ctx, id, 'cancel', (h) => h.executeUpdate(cancelOrderUpdate, { args: [{ reason, requestId, idempotencyKey }] }), { idempotencyKey });
}

export async function advanceOrderClock(ctx: ProcurementContext, scope: Scope, id: string, to: Date) {
  if (scope.livemode) {
    throw new ApiError({ status: 403, code: 'test_mode_only', title: 'Forbidden', detail: 'Order test clocks exist in the sandbox only.', suggestion: 'Use a test key (bp_test_…).' });
  }
  return update(ctx, id, null, (h) => h.executeUpdate(advanceOrderClockUpdate, { args: [{ to: to.getTime() }] }));
}

// ---- Operations (admin) -------------------------------------------------------------------------

export interface OperatorAction {
  operator: string;
  reason: string;
}

async function recordAdminAction(em: EntityManager, scope: Scope, resourceId: string, action: string, op: OperatorAction, details: Record<string, unknown>) {
  await em.execute(
    'insert into erp_admin_actions (account_id, livemode, resource_id, action, operator, reason, details) values (?, ?, ?, ?, ?, ?, ?)',
    [scope.accountId, scope.livemode, resourceId, action, op.operator, op.reason, JSON.stringify(details)],
  );
}

export async function adminActions(em: EntityManager, resourceId: string) {
  return em.execute<{ action: string; operator: string; reason: string; details: Record<string, unknown>; created_at: Date }[]>(
    'select action, operator, reason, details, created_at from erp_admin_actions where resource_id = ? order by id', [resourceId],
  );
}

/** The order, its workflow as Temporal sees it, and the workflow's own live state (a query). */
export async function describeOrderWorkflow(ctx: ProcurementContext, id: string) {
  const order = await findOrder(ctx.em, id);
  const handle = ctx.temporal.client.workflow.getHandle(order.workflowId);
  const description = await handle.describe();
  const live = await handle.query(orderStateQuery);
  return {
    order: orderView(order),
    workflow: {
      workflow_id: description.workflowId, run_id: description.runId, status: description.status.name, task_queue: description.taskQueue,
      history_length: description.historyLength, started_at: description.startTime.toISOString(),
    },
    live,
    actions: await adminActions(ctx.em, id),
  };
}

/** Workflows of this area found by search attributes (the Temporal UI's query, from code). */
export async function findOrderWorkflows(temporal: TemporalHandle, filter: { accountId: string; livemode: boolean; resourceId?: string; status?: string }) {
  const K = BP_SEARCH_ATTRIBUTES;
  const quote = (v: string) => `'${v.replace(/'/g, '')}'`;
  const clauses = [
    `WorkflowType = 'procurementOrderWorkflow'`,
    `${K.accountId.name} = ${quote(filter.accountId)}`,
    `${K.mode.name} = ${quote(filter.livemode ? 'live' : 'test')}`,
    ...(filter.resourceId ? [`${K.resourceId.name} = ${quote(filter.resourceId)}`] : []),
    ...(filter.status ? [`${K.status.name} = ${quote(filter.status)}`] : []),
  ];
  const found: { workflow_id: string; status: string; order_id: string | null }[] = [];
  for await (const w of temporal.client.workflow.list({ query: clauses.join(' AND ') })) {
    found.push({ workflow_id: w.workflowId, status: w.status.name, order_id: String(w.typedSearchAttributes.get(K.resourceId) ?? '') || null });
    if (found.length >= 100) break;
  }
  return found;
}

export async function escalateOrderNow(ctx: ProcurementContext, scope: Scope, id: string, op: OperatorAction) {
  const view = await update(ctx, id, 'escalate', (h) => h.executeUpdate(escalateOrderUpdate, { args: [] }));
  await recordAdminAction(ctx.em, scope, id, 'escalate', op, { escalation_count: view.escalation_count });
  return view;
}

export async function reassignApprover(ctx: ProcurementContext, scope: Scope, id: string, level: number, assignee: string, op: OperatorAction) {
  const view = await update(ctx, id, 'reassign', (h) => h.executeUpdate(reassignApproverUpdate, { args: [{ level, assignee }] }));
  await recordAdminAction(ctx.em, scope, id, 'reassign_approver', op, { level, assignee });
  return view;
}

export async function cancelOrderByOperator(ctx: ProcurementContext, scope: Scope, id: string, op: OperatorAction) {
  const view = await cancelOrder(ctx, id, `operator: ${op.reason}`, null);
  await recordAdminAction(ctx.em, scope, id, 'cancel', op, {});
  return view;
}
