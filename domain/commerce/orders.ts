import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { orderWorkflowId, type OrderDraft } from '../../workflows/commerce/shared.ts';
import { eventRecord, recordEvent } from '../events/outbox.ts';
import { findNewestPerParent, insertScoped, insertStatement, readScopedById, readScopedOr404, readScopedWhere, scopeColumns, type Scope } from '../scope.ts';
import type { PageArgs } from './catalog.ts';
import {
  ORDER_STATUS_GROUPS, Order, Product, Store,
  type Address, type FulfillmentStatus, type OrderLine, type OrderPaymentStatus, type OrderStatus, type OrderStatusGroup,
} from './entities.ts';
import type { OrderView } from './schemas.ts';

export type { OrderView } from './schemas.ts';
import {
  PLAN_OVERTAKEN, consumeStock, plannedReservation, releaseStock, reserveStock, setStockContext, stockContextStatement, wholeWarehouses,
} from './inventory.ts';
import { loadRates, priceIn } from './pricing.ts';
import { isAssertion, isUniqueViolation } from '../../db/errors.ts';
import { inOneTransaction, notifyAfterCommit, notifyAfterCommitStatement } from '../../db/pool.ts';
import { Customer } from '../customers/public.ts';
import { findSucceededPayment } from '../payments/public.ts';

export function orderView(o: Order): OrderView {
  return {
    id: o.id, object: 'order', livemode: o.livemode, store_id: o.storeId, customer_id: o.customerId,
    status: o.status, payment_status: o.paymentStatus, total_amount: o.totalAmount, currency: o.currency,
    line_items: o.lineItems.map((l) => ({ ...l, short_quantity: l.short_quantity ?? 0 })), shipping_address: o.shippingAddress,
    fulfillment: {
      status: o.fulfillmentStatus, tracking_number: o.trackingNumber ?? null, carrier: o.carrier ?? null,
      deadline: o.fulfillmentDeadline.toISOString(), fulfilled_at: o.fulfilledAt?.toISOString() ?? null,
    },
    workflow_id: o.workflowId,
    canceled_at: o.canceledAt?.toISOString() ?? null, cancellation_reason: o.cancellationReason ?? null,
    paid_at: o.paidAt?.toISOString() ?? null, payment_id: o.paymentId ?? null,
    metadata: o.metadata, created_at: o.createdAt.toISOString(), updated_at: o.updatedAt.toISOString(),
  };
}

export interface OrderInput {
  store_id: string;
  customer_id: string;
  currency: string;
  line_items: { sku: string; quantity: number; variant?: string }[];
  shipping_address: Address;
  payment_status?: 'unpaid' | 'paid';
  payment_id?: string;
  metadata?: Record<string, string>;
}

/**
 * The first half of placing an order: checks the store, customer and every line (422 naming every
 * bad field) and prices each line in the order's currency. Nothing is written; `writeOrder` does
 * the rest.
 */
export async function draftOrder(em: EntityManager, scope: Scope, input: OrderInput, requestId: string | null, orderId?: string): Promise<OrderDraft> {
  const errors: FieldError[] = [];
  const skus = [...new Set(input.line_items.map((l) => l.sku))];
  // Independent reads, side by side (each on its own pooled connection), as prepared statements:
  // the order only looks at these records, and an EntityManager costs more than the reads.
  const [store, customer, products] = await Promise.all([
    readScopedById(em, scope, Store, input.store_id),
    readScopedById(em, scope, Customer, input.customer_id),
    readScopedWhere(em, scope, Product, { storeId: input.store_id, sku: skus }),
  ]);
  if (!store) errors.push({ path: 'store_id', message: `no store '${input.store_id}' in this account and mode` });
  if (!customer) errors.push({ path: 'customer_id', message: `no customer '${input.customer_id}' in this account and mode` });
  const bySku = new Map(products.map((p) => [p.sku, p]));
  const needsRates = products.some((p) => p.currency !== input.currency && p.prices[input.currency] === undefined);
  const rates = needsRates ? await loadRates(em, scope) : new Map<string, string>();
  const lines: OrderLine[] = [];
  input.line_items.forEach((item, i) => {
    if (!store) return;
    const product = bySku.get(item.sku);
    if (!product || !product.active) {
      errors.push({ path: `line_items.${i}.sku`, message: `no active product with SKU '${item.sku}' in store ${store.id}` });
      return;
    }
    let base = product.price;
    if (item.variant !== undefined) {
      const variant = product.variants.find((v) => v.name === item.variant);
      if (!variant) {
        errors.push({ path: `line_items.${i}.variant`, message: `product ${product.sku} has no variant '${item.variant}' (variants: ${product.variants.map((v) => v.name).join(', ') || 'none'})` });
        return;
      }
      base = variant.price;
    }
    const price = priceIn({ amount: base, currency: product.currency, fixed: item.variant === undefined ? product.prices : {} }, input.currency, rates);
    if (price.amount === null) {
      errors.push({ path: `line_items.${i}.sku`, message: `'${item.sku}' has no ${input.currency} price and no ${product.currency}→${input.currency} exchange rate is stored` });
      return;
    }
    lines.push({
      product_id: product.id, sku: product.sku, name: product.name, variant: item.variant ?? null, quantity: item.quantity,
      unit_price: price.amount, amount: price.amount * item.quantity, allocations: [],
    });
  });
  if (errors.length) throw validationFailed(errors);

  const total = lines.reduce((sum, l) => sum + l.amount, 0);
  if (!Number.isSafeInteger(total)) throw validationFailed([{ path: 'line_items', message: 'the order total is too large' }]);
  if (input.payment_id !== undefined) await checkOrderPayment(em, input.payment_id, total, input.currency, null);
  const tracked = products.filter((p) => p.trackQuantity && !p.unlimited).map((p) => p.sku);
  const now = Date.now();
  return {
    orderId: orderId ?? newId('order'), accountId: scope.accountId, livemode: scope.livemode, storeId: store!.id, customerId: input.customer_id,
    currency: input.currency, lines, trackedSkus: tracked, total, shippingAddress: input.shipping_address,
    paymentStatus: input.payment_status ?? 'unpaid', paymentId: input.payment_id ?? null, metadata: input.metadata ?? {},
    placedAt: new Date(now).toISOString(),
    fulfillmentDeadline: new Date(now + store!.fulfillmentDeadlineSeconds * 1000).toISOString(),
    requestId,
  };
}

/**
 * The second half (in the API's request): reserves stock (one conditional UPDATE per warehouse
 * row, lines in SKU order so concurrent orders lock rows in one order) and writes the row and
 * `order.created` in one transaction. A shortfall on any line rolls the whole order back (409
 * `insufficient_stock`).
 *
 * The reservations come last, when every SKU has a warehouse holding all its units
 * (`wholeWarehouses`, read without locks): the ledger's context, the order and its event, and the
 * reservations go to PostgreSQL as one message it runs as one transaction (`inOneTransaction`), so
 * a stock row every order of a hot SKU waits for is locked only while the server reserves and
 * commits, never while this process is busy with other requests between two statements. Each
 * reservation still re-checks the units on the row it locks; if another order took them since the
 * plan, nothing is written and the order is written again reserving first, in a transaction
 * (`reserveStock`, which also splits a line across warehouses and answers the shortfall).
 * `order.created` is the order workflow's start in the outbox: the commerce consumer starts
 * `order-<id>` from it (order-process.ts). Idempotent: keyed by the order id, a second run rolls
 * back on the primary key and returns the row.
 *
 * `actor` names who placed it in the stock ledger (`key:<id>`). The workflow's first step calls it
 * again with `confirm`: it finds the row and stamps `workflow_confirmed_at` (the workflow exists).
 * It writes the order itself only for a workflow started before orders were written by the API,
 * whose first step had not run yet; a draft made from a written order (`written`, the outbox's
 * start) never writes one — without its row it is a refusal (404).
 */
export async function writeOrder(
  em: EntityManager, scope: Scope, draft: OrderDraft, opts: { confirm?: boolean; actor?: string } = {},
): Promise<OrderView> {
  if (opts.confirm) {
    // One statement in the common case. Not a change of the order (no version, no updated_at, no
    // event): a fact about its workflow.
    const stamped = await em.getConnection().execute<Record<string, unknown>[]>(
      `update orders set workflow_confirmed_at = now()
        where id = ? and account_id = ? and livemode = ? and workflow_confirmed_at is null returning *`,
      [draft.orderId, scope.accountId, scope.livemode],
    );
    const found = stamped[0] ? em.map(Order, stamped[0]) : await em.findOne(Order, { id: draft.orderId });
    if (found) return orderView(found);
    if (draft.written) throw notFound('order', draft.orderId);
  }
  // The ledger's actor: the API key that placed the order (`workflow:` when the workflow writes it).
  const actor = opts.actor ?? `workflow:${orderWorkflowId(draft.orderId)}`;
  const context = { reason: 'order_reservation', reference: draft.orderId, actor, requestId: draft.requestId };
  const tracked = new Set(draft.trackedSkus);
  // Reserve in SKU order: two orders for the same SKUs take the row locks in the same order.
  const inSkuOrder = [...draft.lines.keys()]
    .sort((a, b) => (draft.lines[a]!.sku < draft.lines[b]!.sku ? -1 : draft.lines[a]!.sku > draft.lines[b]!.sku ? 1 : a - b))
    .filter((index) => tracked.has(draft.lines[index]!.sku));
  const records = (lines: OrderLine[]) => {
    const row = orderRow(draft, scope, lines, opts.confirm === true);
    const view = orderView(row);
    return { view, records: [{ entity: Order, data: row }, eventRecord({ type: 'order.created', object: view, customerId: row.customerId, requestId: draft.requestId })] };
  };

  // Reserved last, with everything else, in one round trip; null when some SKU has no warehouse holding all its units.
  const placeAsPlanned = async (): Promise<OrderView | null> => {
    const plan = await wholeWarehouses(em, scope, unitsPerSku(inSkuOrder.map((index) => draft.lines[index]!)));
    if (!plan) return null;
    const lines = draft.lines.map((l) => ({ ...l, allocations: tracked.has(l.sku) ? [{ warehouse_id: plan.get(l.sku)!, quantity: l.quantity }] : [] }));
    const { view, records: written } = records(lines);
    // Its own transaction: the dispatcher and the stock sequencer are woken after the commit, so that
    // orders do not queue for PostgreSQL's NOTIFY lock through each other's WAL flushes.
    const ownTransaction = !em.isInTransaction();
    await inOneTransaction(em, [
      ...(ownTransaction ? [notifyAfterCommitStatement] : []),
      stockContextStatement(context),
      insertStatement(em, scope, written),
      ...inSkuOrder.map((index) => plannedReservation(scope, plan.get(lines[index]!.sku)!, lines[index]!.sku, lines[index]!.quantity, draft.requestId)),
    ]).catch((err: unknown) => {
      throw isAssertion(err, PLAN_OVERTAKEN) ? new PlanOvertaken() : err;
    });
    if (ownTransaction) notifyAfterCommit(em);
    return view;
  };
  // Reserving first, in a transaction: units split across warehouses or short (409), or a plan another order overtook.
  const reserveFirst = () => em.transactional(async (tx) => {
    await setStockContext(tx, context);
    const lines: OrderLine[] = draft.lines.map((l) => ({ ...l, allocations: [] }));
    for (const index of inSkuOrder) lines[index]!.allocations = await reserveStock(tx, scope, lines[index]!.sku, lines[index]!.quantity, draft.requestId);
    const { view, records: written } = records(lines);
    await insertScoped(tx, scope, written);
    await tx.flush(); // the low-stock events the reservations noted, if any
    return view;
  });
  return placeAsPlanned().then((view) => view ?? reserveFirst(), async (err: unknown) => {
    if (err instanceof PlanOvertaken) return reserveFirst();
    throw err;
  }).catch(async (err: unknown) => {
    // Written already (a retry whose first attempt committed): everything above rolled back; the order as it is.
    if (isUniqueViolation(err, 'orders_pkey')) return orderView(await findOrder(em.fork(), draft.orderId));
    if (draft.paymentId !== null && isUniqueViolation(err, 'orders_payment_id_unique')) throw paymentAlreadyUsed(draft.paymentId, null);
    throw err;
  });
}

/** A new order's row: processing, with `lines` (their allocations made). */
function orderRow(draft: OrderDraft, scope: Scope, lines: OrderLine[], confirmed: boolean): Order {
  const placedAt = new Date(draft.placedAt);
  return {
    id: draft.orderId, ...scopeColumns(scope), storeId: draft.storeId, customerId: draft.customerId, status: 'processing',
    paymentStatus: draft.paymentStatus, totalAmount: draft.total, currency: draft.currency,
    lineItems: lines, shippingAddress: draft.shippingAddress, fulfillmentStatus: 'pending',
    trackingNumber: null, carrier: null,
    fulfillmentDeadline: new Date(draft.fulfillmentDeadline),
    workflowId: orderWorkflowId(draft.orderId), workflowConfirmedAt: confirmed ? new Date() : null,
    paidAt: draft.paymentStatus === 'paid' ? placedAt : null, paymentId: draft.paymentId,
    fulfilledAt: null, canceledAt: null, cancellationReason: null,
    metadata: draft.metadata, version: 1, createdAt: placedAt, updatedAt: placedAt,
  };
}

/** Another order took the units a plan counted on between the plan and its reservation (rolled back, written again). */
class PlanOvertaken extends Error {}

function unitsPerSku(lines: readonly { sku: string; quantity: number }[]): Map<string, number> {
  const units = new Map<string, number>();
  for (const line of lines) units.set(line.sku, (units.get(line.sku) ?? 0) + line.quantity);
  return units;
}

/**
 * The workflow input of an order that is written already (the outbox consumer's start, or a
 * transition that found no workflow yet): its first step finds the row, so the draft only has to
 * describe it.
 */
export function draftOfOrder(view: OrderView, accountId: string, requestId: string | null): OrderDraft {
  const lines = view.line_items.map(({ allocations: _a, short_quantity: _s, ...line }) => line);
  return {
    orderId: view.id, accountId, livemode: view.livemode, storeId: view.store_id, customerId: view.customer_id,
    currency: view.currency, lines, trackedSkus: [...new Set(view.line_items.filter((l) => l.allocations.length).map((l) => l.sku))],
    total: view.total_amount, shippingAddress: view.shipping_address,
    paymentStatus: view.payment_status === 'unpaid' ? 'unpaid' : 'paid', paymentId: view.payment_id, metadata: view.metadata,
    placedAt: view.created_at, fulfillmentDeadline: view.fulfillment.deadline, requestId, written: true,
  };
}

export async function findOrder(em: EntityManager, id: string): Promise<Order> {
  const order = await em.findOne(Order, { id });
  if (!order) throw notFound('order', id);
  return order;
}

/** An order by id for GET /v3/orders/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readOrder(orm: MikroORM, scope: Scope, id: string): Promise<OrderView> {
  return orderView(await readScopedOr404(orm, scope, Order, id, 'order'));
}

export interface OrderFilters {
  status?: OrderStatus[];
  status_group?: OrderStatusGroup[];
  customer_id?: string[];
  store_id?: string[];
  payment_status?: OrderPaymentStatus[];
  created_gte?: Date;
  created_lte?: Date;
}

/** The statuses a filter admits: the intersection of `status` and the union of `status_group`. */
export function statusesOf(filters: OrderFilters): OrderStatus[] | undefined {
  let statuses: OrderStatus[] | undefined = filters.status;
  if (filters.status_group) {
    const grouped = new Set(filters.status_group.flatMap((g) => ORDER_STATUS_GROUPS[g]));
    statuses = (statuses ?? [...grouped]).filter((s) => grouped.has(s));
  }
  return statuses;
}

export async function listOrders(em: EntityManager, filters: OrderFilters, page: PageArgs): Promise<OrderView[]> {
  const where: Record<string, unknown>[] = [page.where];
  const statuses = statusesOf(filters);
  if (statuses) where.push({ status: { $in: statuses } });
  if (filters.customer_id) where.push({ customerId: { $in: filters.customer_id } });
  if (filters.store_id) where.push({ storeId: { $in: filters.store_id } });
  if (filters.payment_status) where.push({ paymentStatus: { $in: filters.payment_status } });
  if (filters.created_gte) where.push({ createdAt: { $gte: filters.created_gte } });
  if (filters.created_lte) where.push({ createdAt: { $lte: filters.created_lte } });
  const rows = await em.find(Order, { $and: where }, { orderBy: { id: page.direction }, limit: page.limit + 1 });
  return rows.map(orderView);
}

export interface OrderPatch {
  shipping_address?: Address;
  metadata?: Record<string, string | null>;
}

/**
 * Changes an order's metadata or shipping address. The row is locked (FOR UPDATE) for the
 * read-change-write, and the version column is checked on write, so concurrent updates apply one
 * after the other and none is lost (the v3.1.5 race fix).
 */
export async function updateOrder(em: EntityManager, scope: Scope, id: string, patch: OrderPatch, requestId: string): Promise<OrderView> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    const before = orderView(order);
    const previous: Record<string, unknown> = {};
    if (patch.shipping_address !== undefined) {
      if (order.status !== 'processing') {
        throw conflict('invalid_state_transition', `The order is ${order.status}; its shipping address can no longer change.`,
          'Change the shipping address only while the order is processing.', { current_state: order.status });
      }
      if (JSON.stringify(order.shippingAddress) !== JSON.stringify(patch.shipping_address)) {
        previous.shipping_address = before.shipping_address;
        order.shippingAddress = patch.shipping_address;
      }
    }
    if (patch.metadata !== undefined) {
      const next = { ...order.metadata };
      for (const [k, v] of Object.entries(patch.metadata)) {
        if (v === null || v === '') delete next[k];
        else next[k] = v;
      }
      if (Object.keys(next).length > 50) throw validationFailed([{ path: 'metadata', message: 'metadata holds at most 50 keys' }]);
      if (JSON.stringify(next) !== JSON.stringify(order.metadata)) {
        previous.metadata = before.metadata;
        order.metadata = next;
      }
    }
    if (!Object.keys(previous).length) return before;
    order.updatedAt = new Date();
    recordEvent(tx, scope, { type: 'order.updated', object: orderView(order), previousAttributes: previous, customerId: order.customerId, requestId });
    await tx.flush();
    return orderView(order);
  });
}

function invalidTransition(order: Order, action: string): ApiError {
  return conflict('invalid_state_transition', `Order ${order.id} is ${order.status}; it cannot be ${action}.`,
    order.status === 'processing' ? 'Retry in a moment: another change to this order is in progress.' : `Only a processing order can be ${action}.`,
    { current_state: order.status });
}

export interface TransitionResult {
  status: OrderStatus;
  fulfillment: FulfillmentStatus;
}

/**
 * Fulfils a processing order: the reserved units leave their warehouses, `order.fulfilled` is
 * recorded. Idempotent: a retry after a commit whose answer was lost finds the order fulfilled.
 */
export async function fulfillOrder(
  em: EntityManager, scope: Scope, id: string, args: { trackingNumber: string | null; carrier: string | null; requestId: string | null },
): Promise<TransitionResult> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    if (order.status === 'fulfilled') return { status: order.status, fulfillment: order.fulfillmentStatus };
    if (order.status !== 'processing') throw invalidTransition(order, 'fulfilled');
    await setStockContext(tx, { reason: 'order_fulfillment', reference: id, actor: `workflow:${order.workflowId}`, requestId: args.requestId });
    for (const line of order.lineItems) await consumeStock(tx, scope, line.sku, line.allocations);
    const now = new Date();
    Object.assign(order, {
      status: 'fulfilled', fulfillmentStatus: 'fulfilled', trackingNumber: args.trackingNumber, carrier: args.carrier,
      fulfilledAt: now, updatedAt: now,
    });
    recordEvent(tx, scope, { type: 'order.fulfilled', object: orderView(order), customerId: order.customerId, requestId: args.requestId });
    await tx.flush();
    return { status: order.status, fulfillment: order.fulfillmentStatus };
  });
}

/** Cancels a processing order and releases its reserved stock (the compensation of the reservation). */
export async function cancelOrder(
  em: EntityManager, scope: Scope, id: string, args: { reason: string | null; requestId: string | null },
): Promise<TransitionResult> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    if (order.status === 'canceled') return { status: order.status, fulfillment: order.fulfillmentStatus };
    if (order.status !== 'processing') throw invalidTransition(order, 'canceled');
    await setStockContext(tx, { reason: 'order_cancellation', reference: id, actor: `workflow:${order.workflowId}`, requestId: args.requestId });
    for (const line of order.lineItems) await releaseStock(tx, scope, line.sku, line.allocations);
    const now = new Date();
    Object.assign(order, { status: 'canceled', fulfillmentStatus: 'canceled', canceledAt: now, cancellationReason: args.reason, updatedAt: now });
    recordEvent(tx, scope, { type: 'order.canceled', object: orderView(order), customerId: order.customerId, requestId: args.requestId });
    await tx.flush();
    return { status: order.status, fulfillment: order.fulfillmentStatus };
  });
}

/**
 * A shipment of the order got its label (the shipping area, through the order workflow): the order
 * shows the shipment's tracking number and carrier (`order.updated`). Only a processing order changes.
 */
export async function recordOrderShipment(
  em: EntityManager, scope: Scope, id: string, args: { trackingNumber: string; carrier: string; requestId: string | null },
): Promise<TransitionResult> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    if (order.status !== 'processing' || (order.trackingNumber === args.trackingNumber && order.carrier === args.carrier)) {
      return { status: order.status, fulfillment: order.fulfillmentStatus };
    }
    const before = orderView(order);
    Object.assign(order, { trackingNumber: args.trackingNumber, carrier: args.carrier, updatedAt: new Date() });
    recordEvent(tx, scope, {
      type: 'order.updated', object: orderView(order), previousAttributes: { fulfillment: before.fulfillment },
      customerId: order.customerId, requestId: args.requestId,
    });
    await tx.flush();
    return { status: order.status, fulfillment: order.fulfillmentStatus };
  });
}

/** Units of one SKU a pick list could not find in one warehouse for an order. */
export interface ShortPickedUnits {
  sku: string;
  warehouseId: string;
  short: number;
}

/**
 * A pick list found fewer units than were reserved for a processing order (the warehouses area,
 * inside the transaction that completes the pick list, so this runs exactly once with it): each
 * short unit leaves the line's allocation in that warehouse (later lines of the SKU give theirs up
 * first), is added to the line's `short_quantity`, and its reservation is released (ledger reason
 * `short_pick`, the pick list as reference); `order.short_picked` tells subscribers, with the
 * previous `line_items`. On-hand stock is left as it is: a missing unit may be a mis-pick, and
 * a cycle count settles the bin. A fulfilment afterwards ships the units still allocated. An order
 * no longer processing (canceled meanwhile) is left alone. Returns the order, or null if unchanged.
 */
export async function recordShortPick(
  tx: EntityManager, scope: Scope, id: string, shorts: ShortPickedUnits[], args: { pickListId: string; requestId: string | null },
): Promise<OrderView | null> {
  const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!order || order.status !== 'processing') return null;
  const before = orderView(order);
  const lines: OrderLine[] = order.lineItems.map((l) => ({ ...l, allocations: l.allocations.map((a) => ({ ...a })) }));
  await setStockContext(tx, { reason: 'short_pick', reference: args.pickListId, actor: `pick_list:${args.pickListId}`, requestId: args.requestId });
  let changed = false;
  for (const s of shorts) {
    let left = s.short;
    for (const line of [...lines].reverse()) {
      const allocation = line.sku === s.sku ? line.allocations.find((a) => a.warehouse_id === s.warehouseId) : undefined;
      if (!allocation || left === 0) continue;
      const take = Math.min(left, allocation.quantity);
      allocation.quantity -= take;
      line.short_quantity = (line.short_quantity ?? 0) + take;
      left -= take;
    }
    const released = s.short - left;
    if (released > 0) {
      await releaseStock(tx, scope, s.sku, [{ warehouse_id: s.warehouseId, quantity: released }]);
      changed = true;
    }
  }
  if (!changed) return null;
  for (const line of lines) line.allocations = line.allocations.filter((a) => a.quantity > 0);
  order.lineItems = lines;
  order.updatedAt = new Date();
  const after = orderView(order);
  recordEvent(tx, scope, {
    type: 'order.short_picked', object: after, previousAttributes: { line_items: before.line_items },
    customerId: order.customerId, requestId: args.requestId,
  });
  await tx.flush();
  return after;
}

/** The fulfilment deadline passed: mark the order delayed and record `order.fulfillment.delayed` once. */
export async function markFulfillmentDelayed(em: EntityManager, scope: Scope, id: string): Promise<TransitionResult> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    if (order.status !== 'processing' || order.fulfillmentStatus !== 'pending') {
      return { status: order.status, fulfillment: order.fulfillmentStatus };
    }
    order.fulfillmentStatus = 'delayed';
    order.updatedAt = new Date();
    recordEvent(tx, scope, { type: 'order.fulfillment.delayed', object: orderView(order), customerId: order.customerId });
    await tx.flush();
    return { status: order.status, fulfillment: order.fulfillmentStatus };
  });
}

/**
 * A `payment_id` pays an order only when it is a succeeded payment of the same account and mode
 * (the em's scope), for exactly the order's total and currency, not refunded, and not already the
 * payment of another order: 422 `order_payment_invalid` (path `payment_id`) or 409
 * `order_payment_used`. The unique index on orders (account, mode, payment_id) closes the race two
 * concurrent orders would otherwise win together (see `paymentAlreadyUsed`).
 */
async function checkOrderPayment(em: EntityManager, paymentId: string, total: number, currency: string, orderId: string | null): Promise<void> {
  const payment = await findSucceededPayment(em, paymentId);
  const invalid = (message: string): ApiError => new ApiError({
    status: 422, code: 'order_payment_invalid', title: 'Payment Not Usable',
    detail: `Payment '${paymentId}' cannot pay this order: ${message}.`,
    suggestion: 'Pay the order\'s exact total in its currency, then send that payment\'s id as payment_id.',
    errors: [{ path: 'payment_id', message }],
  });
  if (!payment) throw invalid('no succeeded payment with this id exists in this account and mode');
  if (payment.currency !== currency) throw invalid(`the payment is in ${payment.currency}, the order in ${currency}`);
  if (payment.amount !== total) throw invalid(`the payment is for ${payment.amount}, the order totals ${total} (minor units)`);
  if (payment.amountRefunded > 0) throw invalid('the payment was (partly) refunded');
  const other = await em.fork().findOne(Order, { paymentId, ...(orderId ? { id: { $ne: orderId } } : {}) }, { fields: ['id'] });
  if (other) throw paymentAlreadyUsed(paymentId, other.id);
}

function paymentAlreadyUsed(paymentId: string, orderId: string | null): ApiError {
  return conflict('order_payment_used', `Payment '${paymentId}' already pays ${orderId ? `order ${orderId}` : 'another order'}.`,
    'One payment pays one order: create a new payment for this order.', orderId ? { order_id: orderId } : {});
}

/** Records that an order was paid (out of band or by a payment); `order.updated` carries the change. */
export async function markOrderPaid(
  em: EntityManager, scope: Scope, id: string, paymentId: string | null, requestId: string | null,
): Promise<OrderView> {
  return em.transactional(async (tx) => {
    const order = await tx.findOne(Order, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!order) throw notFound('order', id);
    if (order.paymentStatus === 'paid') return orderView(order);
    if (order.status === 'canceled') throw invalidTransition(order, 'paid');
    if (paymentId !== null) await checkOrderPayment(tx, paymentId, order.totalAmount, order.currency, order.id);
    const before = orderView(order);
    const now = new Date();
    Object.assign(order, { paymentStatus: 'paid', paidAt: now, paymentId: paymentId ?? order.paymentId ?? null, updatedAt: now });
    recordEvent(tx, scope, {
      type: 'order.updated', object: orderView(order),
      previousAttributes: { payment_status: before.payment_status, paid_at: before.paid_at, payment_id: before.payment_id },
      customerId: order.customerId, requestId,
    });
    await tx.flush();
    return orderView(order);
  }).catch((err: unknown) => {
    if (paymentId !== null && isUniqueViolation(err, 'orders_payment_id_unique')) throw paymentAlreadyUsed(paymentId, null);
    throw err;
  });
}

/** The newest `perCustomer` orders of each of many customers (optionally in some statuses), in one query. */
export async function ordersOfCustomers(
  em: EntityManager, customerIds: readonly string[], perCustomer: number, status?: readonly string[],
): Promise<OrderView[]> {
  return (await findNewestPerParent(em, Order, 'customerId', customerIds, perCustomer, { status })).map(orderView);
}

/** Orders by id (those that exist in the em's account and mode), in one query. */
export async function ordersByIds(em: EntityManager, ids: readonly string[]): Promise<OrderView[]> {
  if (!ids.length) return [];
  return (await em.find(Order, { id: { $in: [...ids] } })).map(orderView);
}
