import type { EntityManager } from '@mikro-orm/postgresql';
import { type ApiError, conflict, notFound, validationFailed, type FieldError } from '../../platform/errors.ts';
import { recordEvent } from '../events/outbox.ts';
import { Order, recordShortPick } from '../commerce/public.ts';
import type { Scope } from '../scope.ts';
import { iso, requireWarehouse } from './inventory.ts';
import { BAY_WIDTH_M, DEPOT, LOCATION_PATTERN, planRoute, type PlannedRoute } from './routing.ts';
import type { PickListView } from './schemas.ts';

/**
 * Pick lists: orders awaiting fulfilment from one warehouse, their reserved units grouped by bin with
 * the quantity per order, and a walking route. The orders' units are already reserved by the commerce
 * area when the order is placed; a pick list allocates those reservations to itself (an order is on at
 * most one open or picking list, a unique index), and cancelling it releases the allocation so the
 * orders can go on another list. Lifecycle: open → picking → completed (picked quantities confirmed,
 * short picks recorded per order and announced with `pick_list.completed`) or cancelled. A short
 * pick changes its order in the same transaction (commerce's `recordShortPick`: the line's
 * `short_quantity`, the unpicked reservation released, `order.short_picked`), so the completion and
 * the orders' changes commit together, once: a retry finds the list completed and changes nothing.
 */

type Line = PickListView['lines'][number];
type ShortPick = PickListView['short_picks'][number];

interface PickListRow {
  id: string;
  livemode: boolean;
  warehouse_id: string;
  status: PickListView['status'];
  optimize_route: boolean;
  order_ids: string[];
  lines: Line[];
  route: PlannedRoute;
  short_picks: ShortPick[];
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  cancelled_at: string | null;
}

const COLUMNS = `id, livemode, warehouse_id, status, optimize_route, order_ids, lines, route, short_picks, ${iso('created_at')} as created_at,
  ${iso('updated_at')} as updated_at, ${iso('completed_at')} as completed_at, ${iso('cancelled_at')} as cancelled_at`;

function view(r: PickListRow): PickListView {
  return { ...r, object: 'pick_list' };
}

export interface PickListInput {
  order_ids: string[];
  warehouse_id: string;
  optimize_route: boolean;
}

/** Metres from the front to the back cross-aisle: one bay beyond the furthest bay holding stock. */
async function aisleLength(em: EntityManager, scope: Scope, warehouseId: string): Promise<number> {
  const rows = await em.execute<{ location: string }[]>(
    'select distinct location from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ? and location is not null',
    [scope.accountId, scope.livemode, warehouseId]);
  let bays = 0;
  for (const r of rows) {
    const m = LOCATION_PATTERN.exec(r.location);
    if (m) bays = Math.max(bays, Number(m[2]));
  }
  return (bays + 1) * BAY_WIDTH_M;
}

export async function createPickList(em: EntityManager, scope: Scope, id: string, input: PickListInput, requestId: string | null): Promise<PickListView> {
  const existing = await findPickList(em, scope, id);
  if (existing) return existing; // the Idempotency-Key's earlier attempt created it
  await requireWarehouse(em, scope, input.warehouse_id, 'warehouse_id');
  const orderIds = [...new Set(input.order_ids)];
  const orders = await em.find(Order, { id: { $in: orderIds } });
  const byId = new Map(orders.map((o) => [o.id, o]));
  const errors: FieldError[] = [];
  const units: { orderId: string; sku: string; quantity: number }[] = [];
  input.order_ids.forEach((orderId, i) => {
    if (input.order_ids.indexOf(orderId) !== i) return errors.push({ path: `order_ids.${i}`, message: `order '${orderId}' is listed twice` });
    const order = byId.get(orderId);
    if (!order) return errors.push({ path: `order_ids.${i}`, message: `no order '${orderId}' in this account and mode` });
    if (order.status !== 'processing' || !['pending', 'delayed'].includes(order.fulfillmentStatus)) {
      return errors.push({ path: `order_ids.${i}`, message: `order '${orderId}' is ${order.status} (fulfilment ${order.fulfillmentStatus}); only orders awaiting fulfilment can be picked` });
    }
    const mine = order.lineItems.flatMap((l) => l.allocations.filter((a) => a.warehouse_id === input.warehouse_id).map((a) => ({ orderId, sku: l.sku, quantity: a.quantity })));
    if (!mine.length) return errors.push({ path: `order_ids.${i}`, message: `order '${orderId}' has no units reserved in warehouse ${input.warehouse_id}; pick it from the warehouse that holds its reservation` });
    units.push(...mine);
  });
  if (errors.length) throw validationFailed(errors);

  const skus = [...new Set(units.map((u) => u.sku))];
  const locations = new Map((await em.execute<{ sku: string; location: string | null }[]>(
    'select sku, location from inventory_levels where account_id = ? and livemode = ? and warehouse_id = ? and sku in (select jsonb_array_elements_text(?::jsonb))',
    [scope.accountId, scope.livemode, input.warehouse_id, JSON.stringify(skus)])).map((r) => [r.sku, r.location ?? DEPOT]));
  const lines = new Map<string, Line>();
  for (const u of units) {
    const location = locations.get(u.sku) ?? DEPOT;
    const key = `${location}\u0000${u.sku}`;
    const line = lines.get(key) ?? { location, sku: u.sku, quantity: 0, picked: null, orders: [] };
    line.quantity += u.quantity;
    const perOrder = line.orders.find((o) => o.order_id === u.orderId);
    if (perOrder) perOrder.quantity += u.quantity;
    else line.orders.push({ order_id: u.orderId, quantity: u.quantity });
    lines.set(key, line);
  }
  const route = planRoute([...new Set([...lines.values()].map((l) => l.location))], input.optimize_route, await aisleLength(em, scope, input.warehouse_id));
  const position = new Map(route.stops.map((s, i) => [s, i]));
  const ordered = [...lines.values()].sort((a, b) => (position.get(a.location)! - position.get(b.location)!) || (a.sku < b.sku ? -1 : 1));

  return em.transactional(async (tx) => {
    await tx.execute(
      `insert into pick_lists (id, account_id, livemode, warehouse_id, status, optimize_route, order_ids, lines, route, created_at, updated_at)
       values (?, ?, ?, ?, 'open', ?, ?::jsonb, ?::jsonb, ?::jsonb, now(), now())`,
      [id, scope.accountId, scope.livemode, input.warehouse_id, input.optimize_route, JSON.stringify(orderIds), JSON.stringify(ordered), JSON.stringify(route)]);
    const taken = await tx.execute<{ order_id: string; pick_list_id: string }[]>(
      `insert into pick_list_orders (account_id, livemode, order_id, pick_list_id)
       select ?, ?, o, ? from jsonb_array_elements_text(?::jsonb) as o
       on conflict (account_id, livemode, order_id) where active do nothing returning order_id`,
      [scope.accountId, scope.livemode, id, JSON.stringify(orderIds)]);
    if (taken.length !== orderIds.length) {
      const got = new Set(taken.map((t) => t.order_id));
      const busy = orderIds.filter((o) => !got.has(o));
      throw conflict('order_on_pick_list', `Order${busy.length > 1 ? 's' : ''} ${busy.join(', ')} ${busy.length > 1 ? 'are' : 'is'} already on an open pick list.`,
        'Complete or cancel that pick list first, or leave these orders out.', { order_ids: busy });
    }
    const row = (await tx.execute<PickListRow[]>(`select ${COLUMNS} from pick_lists where id = ?`, [id]))[0]!;
    void requestId;
    return view(row);
  });
}

export async function findPickList(em: EntityManager, scope: Scope, id: string, lock = false): Promise<PickListView | null> {
  const rows = await em.execute<PickListRow[]>(
    `select ${COLUMNS} from pick_lists where account_id = ? and livemode = ? and id = ? ${lock ? 'for update' : ''}`, [scope.accountId, scope.livemode, id]);
  return rows[0] ? view(rows[0]) : null;
}

export async function getPickList(em: EntityManager, scope: Scope, id: string): Promise<PickListView> {
  const found = await findPickList(em, scope, id);
  if (!found) throw notFound('pick list', id);
  return found;
}

function refuse(pickList: PickListView, action: string, allowed: string): ApiError {
  return conflict('invalid_state_transition', `Pick list ${pickList.id} is ${pickList.status}; it cannot be ${action}.`,
    `Only ${allowed} pick lists can be ${action}; fetch the pick list to see its status.`, { current_state: pickList.status });
}

export interface PickedLine {
  location?: string;
  sku: string;
  picked: number;
}

/** open → picking; picking → completed (with the picked quantities) or cancelled. Idempotent for the state it is already in. */
export async function transitionPickList(
  em: EntityManager, scope: Scope, id: string, to: 'picking' | 'completed' | 'cancelled', picked: PickedLine[], requestId: string | null,
): Promise<PickListView> {
  return em.transactional(async (tx) => {
    const pl = await findPickList(tx, scope, id, true);
    if (!pl) throw notFound('pick list', id);
    if (pl.status === to) return pl;
    if (to === 'picking' && pl.status !== 'open') throw refuse(pl, 'started', 'open');
    if (to === 'cancelled' && !['open', 'picking'].includes(pl.status)) throw refuse(pl, 'cancelled', 'open or picking');
    if (to === 'completed' && pl.status !== 'picking') throw refuse(pl, 'completed', 'picking');

    let lines = pl.lines;
    const shorts: ShortPick[] = [];
    if (to === 'completed') {
      const errors: FieldError[] = [];
      const given = new Map<number, number>();
      picked.forEach((p, i) => {
        const idx = pl.lines.findIndex((l) => l.sku === p.sku && (p.location === undefined || l.location === p.location));
        if (idx < 0) return errors.push({ path: `lines.${i}.sku`, message: `'${p.sku}'${p.location ? ` at ${p.location}` : ''} is not on this pick list` });
        if (given.has(idx)) return errors.push({ path: `lines.${i}`, message: 'this line is confirmed twice' });
        if (p.picked > pl.lines[idx]!.quantity) return errors.push({ path: `lines.${i}.picked`, message: `at most ${pl.lines[idx]!.quantity} units of '${p.sku}' are to be picked here` });
        given.set(idx, p.picked);
      });
      if (errors.length) throw validationFailed(errors);
      lines = pl.lines.map((l, idx) => {
        const got = given.get(idx) ?? l.quantity;
        // Short units fall on the orders last in line (order id order): earlier orders are served first.
        let left = got;
        for (const o of [...l.orders].sort((a, b) => (a.order_id < b.order_id ? -1 : 1))) {
          const served = Math.min(left, o.quantity);
          left -= served;
          if (served < o.quantity) shorts.push({ order_id: o.order_id, sku: l.sku, location: l.location, ordered: o.quantity, picked: served, short: o.quantity - served });
        }
        return { ...l, picked: got };
      });
    }
    await tx.execute(
      `update pick_lists set status = ?, lines = ?::jsonb, short_picks = ?::jsonb, updated_at = now(),
              completed_at = case when ? = 'completed' then now() else completed_at end,
              cancelled_at = case when ? = 'cancelled' then now() else cancelled_at end
        where id = ?`,
      [to, JSON.stringify(lines), JSON.stringify(shorts), to, to, id]);
    if (to !== 'picking') await tx.execute('update pick_list_orders set active = false where pick_list_id = ?', [id]);
    for (const [orderId, units] of Map.groupBy(shorts, (s) => s.order_id)) {
      await recordShortPick(tx, scope, orderId, units.map((u) => ({ sku: u.sku, warehouseId: pl.warehouse_id, short: u.short })), { pickListId: id, requestId });
    }
    const after = (await findPickList(tx, scope, id))!;
    if (to === 'completed') {
      recordEvent(tx, scope, { type: 'pick_list.completed', object: after, requestId });
      await tx.flush();
    }
    return after;
  });
}

/** Pick lists of the scope, newest first. */
export async function listPickLists(em: EntityManager, scope: Scope, page: { after?: string; limit: number; status?: string }): Promise<PickListView[]> {
  const rows = await em.execute<PickListRow[]>(
    `select ${COLUMNS} from pick_lists where account_id = ? and livemode = ? ${page.after ? 'and id < ?' : ''} ${page.status ? 'and status = ?' : ''}
      order by id desc limit ?`,
    [scope.accountId, scope.livemode, ...(page.after ? [page.after] : []), ...(page.status ? [page.status] : []), page.limit + 1]);
  return rows.map(view);
}
