import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { adminRouter } from '../../api/admin/router.ts';
import { createCallerFactory, createContextInner } from '../../api/admin/trpc.ts';
import { permissionScopes } from '../../domain/registry.ts';
import { recordStockMovement } from '../../domain/warehouses/public.ts';
import { scopedEm } from '../../domain/scope.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { create, eventsAbout, eventually, level, openShop, orderBody, stock, stockedProduct, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
let shop: Shop;
let second: string;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000', LOG_LEVEL: 'error' } }, async (t) => {
  ({ platform, http, key, accountId } = t);
  shop = await openShop(http, key);
  second = (await create(http, key, '/v3/warehouses', { name: 'Second warehouse' })).id;
});

const inventory = (warehouseId: string, query = '') => http(`/v3/warehouses/${warehouseId}/inventory${query}`, { key });
const patch = (warehouseId: string, sku: string, body: unknown) => http(`/v3/warehouses/${warehouseId}/inventory/${sku}`, { key, method: 'PATCH', body });

describe('inventory, settings, alerts and the movements ledger', () => {
  it('lists a warehouse\'s stock by SKU with alerts, paginated and filtered', async () => {
    for (const [sku, qty] of [['INV-A1', 10], ['INV-A2', 0], ['INV-B1', 3]] as const) {
      await stockedProduct(http, key, shop, sku, 0, { inventory: { reorder_point: 4, safety_stock: 2 } });
      await stock(http, key, shop.warehouseId, sku, qty);
    }
    let res = await patch(shop.warehouseId, 'INV-A1', { location: 'a-03-2-b', reorder_point: 12, safety_stock: 5 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ object: 'warehouse_inventory_item', sku: 'INV-A1', location: 'A-03-2-B', reorder_point: 12, safety_stock: 5, quantity: 10, available: 10 });

    res = await inventory(shop.warehouseId, '?sku_prefix=INV-&limit=2');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'warehouse_inventory', warehouse_id: shop.warehouseId, has_more: true });
    expect(res.body.inventory.map((i: { sku: string }) => i.sku)).toEqual(['INV-A1', 'INV-A2']);
    expect(res.body.inventory[0]).toMatchObject({ quantity: 10, reserved: 0, available: 10, in_transit: 0, location: 'A-03-2-B', reorder_point: 12 });
    // One alert per SKU, the most severe, for the whole warehouse.
    expect(res.body.alerts.map((a: { type: string; sku: string }) => [a.type, a.sku])).toEqual([
      ['out_of_stock', 'INV-A2'], ['low_stock', 'INV-A1'], ['low_stock', 'INV-B1'],
    ]);
    expect(res.body.alerts[1]).toMatchObject({ current_stock: 10, reorder_point: 12 });
    const next = await inventory(shop.warehouseId, `?sku_prefix=INV-&limit=2&cursor=${res.body.next_cursor}`);
    expect(next.body.inventory.map((i: { sku: string }) => i.sku)).toEqual(['INV-B1']);
    expect(next.body.has_more).toBe(false);

    await patch(shop.warehouseId, 'INV-B1', { safety_stock: 4 });
    const below = await inventory(shop.warehouseId, '?below_reorder=true&sku_prefix=INV-B');
    expect(below.body.inventory.map((i: { sku: string }) => i.sku)).toEqual(['INV-B1']);
    expect(below.body.alerts).toEqual([expect.objectContaining({ type: 'below_safety_stock', sku: 'INV-B1', current_stock: 3 })]);
    // The prefix is literal: LIKE wildcards match nothing.
    expect((await inventory(shop.warehouseId, '?sku_prefix=INV-%25')).body.inventory).toEqual([]);
  });

  it('refuses bad input: unknown warehouse 404, unknown SKU 404, bad location 422, NUL bytes, huge integers, other accounts', async () => {
    expect((await inventory('wh_nope')).status).toBe(404);
    expect((await patch(shop.warehouseId, 'NO-SUCH', { reorder_point: 1 })).status).toBe(404);
    expect((await patch('wh_nope', 'INV-A1', { reorder_point: 1 })).status).toBe(404);
    let res = await patch(shop.warehouseId, 'INV-A1', { location: 'shelf 3', reorder_point: 2 ** 40 });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['location', 'reorder_point']);
    expect(res.body.errors.find((e: { path: string }) => e.path === 'location').message).toContain('A-03-2-B');
    res = await patch(shop.warehouseId, 'INV-A1', {});
    expect(res.status).toBe(422);
    res = await http(`/v3/warehouses/${shop.warehouseId}/movements`, { key, body: { sku: 'INV-A1', quantity: 1, reason: 'bad\u0000' } });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].path).toBe('reason');
    const otherKey = await platform.newKey({ accountId: await platform.newAccount() });
    expect((await http(`/v3/warehouses/${shop.warehouseId}/inventory`, { key: otherKey })).status).toBe(404);
    expect((await http(`/v3/warehouses/${shop.warehouseId}/movements`, { key: otherKey })).status).toBe(404);
  });

  it('records every movement in the ledger with who, why, before and after; removals never go below reserved', async () => {
    await stockedProduct(http, key, shop, 'LED-1', 0);
    await stock(http, key, shop.warehouseId, 'LED-1', 5);
    let res = await http(`/v3/warehouses/${shop.warehouseId}/movements`, { key, body: { sku: 'LED-1', quantity: -2, reason: 'damaged', reference: 'RMA-7' } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ quantity: 3, available: 3 });
    res = await http(`/v3/warehouses/${shop.warehouseId}/movements`, { key, body: { sku: 'LED-1', quantity: -4 } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'insufficient_stock' });
    const order = await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'LED-1', quantity: 2 }]) });
    expect(order.status, order.text).toBe(201);

    const ledger = await http(`/v3/warehouses/${shop.warehouseId}/movements?sku=LED-1`, { key });
    expect(ledger.status).toBe(200);
    const rows = ledger.body.data;
    expect(rows.map((m: { reason: string }) => m.reason)).toEqual(['order_reservation', 'damaged', 'stock_update']);
    expect(rows[0]).toMatchObject({ reference: order.body.id, reserved_before: 0, reserved_after: 2, quantity_before: 3, quantity_after: 3, actor: rows[1].actor });
    expect(rows[1]).toMatchObject({ quantity_before: 5, quantity_after: 3, reference: 'RMA-7', actor: expect.stringMatching(/^key:key_/), request_id: expect.stringMatching(/^req_/) });
    // The feed's numbers follow within milliseconds of the commit (null until then), in the ledger's order.
    const numbered = await eventually(async () => {
      const data = (await http(`/v3/warehouses/${shop.warehouseId}/movements?sku=LED-1`, { key })).body.data as { seq: number | null }[];
      return data.every((m) => m.seq !== null) ? data : undefined;
    }, 10_000, 'the movements to be numbered');
    expect(numbered[0]!.seq).toBeGreaterThan(numbered[1]!.seq!);
    expect(numbered[1]!.seq).toBeGreaterThan(numbered[2]!.seq!);
    expect((await http(`/v3/warehouses/${shop.warehouseId}/movements?sku=LED-1&reason=damaged`, { key })).body.data).toHaveLength(1);

    // The public function other areas call: several lines, all or nothing.
    const em = scopedEm(platform.orm, { accountId, livemode: false });
    await expect(recordStockMovement(em, { accountId, livemode: false }, [
      { warehouseId: shop.warehouseId, sku: 'LED-1', quantity: 10 },
      { warehouseId: shop.warehouseId, sku: 'LED-1', quantity: -20 },
    ], { reason: 'procurement_receipt' })).rejects.toMatchObject({ code: 'insufficient_stock' });
    const moved = await recordStockMovement(em, { accountId, livemode: false }, [{ warehouseId: second, sku: 'LED-1', quantity: 7 }],
      { reason: 'procurement_receipt', reference: 'PO-1', actor: 'workflow:po-1' });
    expect(moved[0]).toMatchObject({ warehouse_id: second, quantity: 7, in_transit: 0 });
    expect(await level(platform, second, 'LED-1')).toEqual({ quantity: 7, reserved: 0, in_transit: 0 });
    const last = (await http(`/v3/warehouses/${second}/movements`, { key })).body.data[0];
    expect(last).toMatchObject({ reason: 'procurement_receipt', reference: 'PO-1', actor: 'workflow:po-1', quantity_after: 7 });
  });
});

describe('pick lists', () => {
  it('groups the orders\' reserved units by bin with quantities per order and an optimised route', async () => {
    const bins = ['C-10-1-A', 'A-02-1-A', 'B-07-3-C', 'A-09-2-B'];
    for (const [i, bin] of bins.entries()) {
      await stockedProduct(http, key, shop, `PICK-${i}`, 0);
      await stock(http, key, shop.warehouseId, `PICK-${i}`, 50, bin);
    }
    const o1 = (await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'PICK-0', quantity: 2 }, { sku: 'PICK-1', quantity: 1 }]) })).body;
    const o2 = (await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'PICK-0', quantity: 3 }, { sku: 'PICK-2', quantity: 1 }, { sku: 'PICK-3', quantity: 4 }]) })).body;
    const res = await http('/v3/warehouses/pick-lists', { key, body: { order_ids: [o1.id, o2.id], warehouse_id: shop.warehouseId, optimize_route: true } });
    expect(res.status, res.text).toBe(201);
    const pl = res.body;
    expect(pl).toMatchObject({ object: 'pick_list', status: 'open', order_ids: [o1.id, o2.id], optimize_route: true });
    const line0 = pl.lines.find((l: { sku: string }) => l.sku === 'PICK-0');
    expect(line0).toMatchObject({ location: 'C-10-1-A', quantity: 5, orders: [{ order_id: o1.id, quantity: 2 }, { order_id: o2.id, quantity: 3 }] });
    expect(pl.route.stops).toHaveLength(4);
    expect(pl.route.distance).toBeLessThanOrEqual(pl.route.unoptimized_distance);
    expect(pl.lines.map((l: { location: string }) => l.location)).toEqual(pl.route.stops);
    expect((await http(`/v3/warehouses/pick-lists/${pl.id}`, { key })).body).toEqual(pl);

    // An order is on one open list at a time.
    const again = await http('/v3/warehouses/pick-lists', { key, body: { order_ids: [o1.id], warehouse_id: shop.warehouseId } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'order_on_pick_list', order_ids: [o1.id] });

    expect((await http(`/v3/warehouses/pick-lists/${pl.id}/complete`, { key, body: {} })).body.code).toBe('invalid_state_transition');
    expect((await http(`/v3/warehouses/pick-lists/${pl.id}/start`, { key, method: 'POST' })).body.status).toBe('picking');
    const done = await http(`/v3/warehouses/pick-lists/${pl.id}/complete`, { key, body: { lines: [{ sku: 'PICK-0', picked: 4 }] } });
    expect(done.status, done.text).toBe(200);
    expect(done.body.status).toBe('completed');
    expect(done.body.short_picks).toEqual([{ order_id: o2.id, sku: 'PICK-0', location: 'C-10-1-A', ordered: 3, picked: 2, short: 1 }]);
    expect(await eventsAbout(platform, pl.id)).toEqual(['pick_list.completed']);
    // The short order learns it: the line records the short unit, its reservation is released.
    const shorted = (await http(`/v3/orders/${o2.id}`, { key })).body;
    expect(shorted.status).toBe('processing');
    expect(shorted.line_items.find((l: { sku: string }) => l.sku === 'PICK-0')).toMatchObject({ quantity: 3, short_quantity: 1, allocations: [{ warehouse_id: shop.warehouseId, quantity: 2 }] });
    expect(shorted.line_items.filter((l: { sku: string }) => l.sku !== 'PICK-0').map((l: { short_quantity: number }) => l.short_quantity)).toEqual([0, 0]);
    expect((await http(`/v3/orders/${o1.id}`, { key })).body.line_items.map((l: { short_quantity: number }) => l.short_quantity)).toEqual([0, 0]);
    expect(await level(platform, shop.warehouseId, 'PICK-0')).toMatchObject({ quantity: 50, reserved: 4 });
    expect(await eventsAbout(platform, o2.id)).toEqual(['order.created', 'order.short_picked']);
    const [event] = await platform.sql<{ data: { previous_attributes: { line_items: { sku: string; short_quantity: number }[] } } }>(
      `select data from events where type = 'order.short_picked' and data->'object'->>'id' = $1`, [o2.id]);
    expect(event!.data.previous_attributes.line_items.find((l) => l.sku === 'PICK-0')!.short_quantity).toBe(0);
    const [moved] = await platform.sql<{ reason: string; reference: string; reserved_before: number; reserved_after: number }>(
      `select reason, reference, reserved_before, reserved_after from stock_movements where warehouse_id = $1 and sku = 'PICK-0' order by id desc limit 1`, [shop.warehouseId]);
    expect(moved).toEqual({ reason: 'short_pick', reference: pl.id, reserved_before: 5, reserved_after: 4 });
    // Completed: its orders are free for another list.
    const next = await http('/v3/warehouses/pick-lists', { key, body: { order_ids: [o1.id], warehouse_id: shop.warehouseId, optimize_route: false } });
    expect(next.status).toBe(201);
    expect(next.body.route.unoptimized_distance).toBeNull();
    expect((await http(`/v3/warehouses/pick-lists/${next.body.id}/cancel`, { key, method: 'POST' })).body.status).toBe('cancelled');
  });

  it('applies a short pick to its order exactly once: a completion that dies before commit changes nothing, its retry applies it, later retries nothing', async () => {
    await stockedProduct(http, key, shop, 'SHORT-1', 0);
    await stock(http, key, shop.warehouseId, 'SHORT-1', 10, 'D-01-1-A');
    const order = (await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'SHORT-1', quantity: 4 }]) })).body;
    const pl = (await create(http, key, '/v3/warehouses/pick-lists', { order_ids: [order.id], warehouse_id: shop.warehouseId })).id;
    await http(`/v3/warehouses/pick-lists/${pl}/start`, { key, method: 'POST' });
    // The database connection dies at the very end of the completion (its last write, the
    // pick_list.completed event): after the order and the stock changed inside the transaction.
    await platform.sql(`create sequence wh_short_fail_${pl}`);
    await platform.sql(`create function wh_short_fail_${pl}() returns trigger language plpgsql as $$
      begin if new.type = 'pick_list.completed' and new.data->'object'->>'id' = '${pl}' and nextval('wh_short_fail_${pl}') = 1 then
        raise exception 'injected: the server went away mid-transaction' using errcode = '57P01'; end if; return new; end $$`);
    await platform.sql(`create trigger wh_short_fail_${pl} before insert on events for each row execute function wh_short_fail_${pl}()`);
    try {
      const complete = () => http(`/v3/warehouses/pick-lists/${pl}/complete`, { key, body: { lines: [{ sku: 'SHORT-1', picked: 1 }] } });
      const crashed = await complete();
      expect(crashed.status, crashed.text).toBe(503);
      expect((await http(`/v3/orders/${order.id}`, { key })).body.line_items[0]).toMatchObject({ short_quantity: 0, allocations: [{ quantity: 4 }] });
      expect(await level(platform, shop.warehouseId, 'SHORT-1')).toMatchObject({ quantity: 10, reserved: 4 });
      expect((await http(`/v3/warehouses/pick-lists/${pl}`, { key })).body.status).toBe('picking');

      const [first, second] = await Promise.all([complete(), complete()]); // the retry, twice at once
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(first.body.short_picks).toEqual([{ order_id: order.id, sku: 'SHORT-1', location: 'D-01-1-A', ordered: 4, picked: 1, short: 3 }]);
      expect((await complete()).status).toBe(200);
      expect((await http(`/v3/orders/${order.id}`, { key })).body.line_items[0]).toMatchObject({ quantity: 4, short_quantity: 3, allocations: [{ warehouse_id: shop.warehouseId, quantity: 1 }] });
      expect(await level(platform, shop.warehouseId, 'SHORT-1')).toMatchObject({ quantity: 10, reserved: 1 });
      expect(await eventsAbout(platform, order.id)).toEqual(['order.created', 'order.short_picked']);
      expect(await eventsAbout(platform, pl)).toEqual(['pick_list.completed']);
    } finally {
      await platform.sql(`drop trigger wh_short_fail_${pl} on events; drop function wh_short_fail_${pl}(); drop sequence wh_short_fail_${pl}`);
    }
  });

  it('refuses orders that are unknown, another account\'s, not awaiting fulfilment or reserved elsewhere, all named at once', async () => {
    await stockedProduct(http, key, shop, 'PICK-X', 0);
    await stock(http, key, second, 'PICK-X', 5);
    const elsewhere = (await http('/v3/orders', { key, body: orderBody(shop, [{ sku: 'PICK-X', quantity: 1 }]) })).body;
    const res = await http('/v3/warehouses/pick-lists', { key, body: { order_ids: ['ord_nope', elsewhere.id, 'ord_nope'], warehouse_id: shop.warehouseId } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['order_ids.0', 'order_ids.1', 'order_ids.2']);
    expect(res.body.errors[1].message).toContain('no units reserved');
    expect((await http('/v3/warehouses/pick-lists', { key, body: { order_ids: [elsewhere.id], warehouse_id: 'wh_nope' } })).body.errors[0].path).toBe('warehouse_id');
    expect((await http('/v3/warehouses/pick-lists/pick_nope', { key })).status).toBe(404);
  });
});

describe('transfers (workflow transfer-<id>)', () => {
  it('reserves at the source, dispatches into transit, receives partially then fully; same reference, same transfer', async () => {
    await stockedProduct(http, key, shop, 'TRF-1', 0);
    await stock(http, key, shop.warehouseId, 'TRF-1', 20);
    const body = { from_warehouse: shop.warehouseId, to_warehouse: second, items: [{ sku: 'TRF-1', quantity: 8 }], reference: 'REPL-1', carrier: 'dhl', expected_arrival: '2099-01-01' };
    const res = await http('/v3/warehouses/transfer', { key, method: 'PUT', body });
    expect(res.status, res.text).toBe(201);
    const t = res.body;
    expect(t).toMatchObject({ object: 'warehouse_transfer', status: 'reserved', reference: 'REPL-1', workflow_id: `transfer-${t.id}`, items: [{ sku: 'TRF-1', quantity: 8, received: 0, outstanding: 8 }] });
    expect(await level(platform, shop.warehouseId, 'TRF-1')).toEqual({ quantity: 20, reserved: 8, in_transit: 0 });
    const same = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { ...body, items: [{ sku: 'TRF-1', quantity: 1 }] } });
    expect(same.status).toBe(200);
    expect(same.body.id).toBe(t.id);

    let r = await http(`/v3/warehouses/transfers/${t.id}/receive`, { key, body: { items: [{ sku: 'TRF-1', quantity: 1 }] } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'reserved' });
    r = await http(`/v3/warehouses/transfers/${t.id}/dispatch`, { key, method: 'POST' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('in_transit');
    expect(await level(platform, shop.warehouseId, 'TRF-1')).toEqual({ quantity: 12, reserved: 0, in_transit: 0 });
    expect(await level(platform, second, 'TRF-1')).toEqual({ quantity: 0, reserved: 0, in_transit: 8 });
    expect((await http(`/v3/warehouses/transfers/${t.id}/cancel`, { key, body: {} })).body.code).toBe('invalid_state_transition');

    r = await http(`/v3/warehouses/transfers/${t.id}/receive`, { key, body: { items: [{ sku: 'TRF-1', quantity: 9 }] } });
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ path: 'items.0.quantity' });
    r = await http(`/v3/warehouses/transfers/${t.id}/receive`, { key, body: { items: [{ sku: 'TRF-1', quantity: 3 }] }, headers: { 'Idempotency-Key': 'rcv-1' } });
    expect(r.body).toMatchObject({ status: 'partially_received', items: [{ received: 3, outstanding: 5 }] });
    const replay = await http(`/v3/warehouses/transfers/${t.id}/receive`, { key, body: { items: [{ sku: 'TRF-1', quantity: 3 }] }, headers: { 'Idempotency-Key': 'rcv-1' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    r = await http(`/v3/warehouses/transfers/${t.id}/receive`, { key, body: { items: [{ sku: 'TRF-1', quantity: 5 }] } });
    expect(r.body).toMatchObject({ status: 'received', items: [{ received: 8, outstanding: 0 }] });
    expect(r.body.received_at).not.toBeNull();
    expect(await level(platform, second, 'TRF-1')).toEqual({ quantity: 8, reserved: 0, in_transit: 0 });
    const reasons = (await http(`/v3/warehouses/${second}/movements?sku=TRF-1`, { key })).body.data.map((m: { reason: string }) => m.reason);
    expect(reasons).toEqual(['transfer_receipt', 'transfer_receipt', 'transfer_dispatch']);
    const handle = platform.temporal.client.workflow.getHandle(t.workflow_id);
    expect(await handle.result()).toMatchObject({ status: 'received' });
    expect((await handle.describe()).searchAttributes).toMatchObject({ BpResourceId: [t.id], BpAccountId: [accountId], BpStatus: ['received'] });
  });

  it('refuses short stock with the short SKUs (409), cancels before dispatch releasing the reservation, and flags a late transfer once', async () => {
    await stockedProduct(http, key, shop, 'TRF-2', 0);
    await stock(http, key, shop.warehouseId, 'TRF-2', 5);
    const short = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: second, items: [{ sku: 'TRF-2', quantity: 6 }], reference: 'SHORT-1' } });
    expect(short.status).toBe(409);
    expect(short.body).toMatchObject({ code: 'insufficient_stock', items: [{ sku: 'TRF-2', available: 5 }] });
    expect(await level(platform, shop.warehouseId, 'TRF-2')).toEqual({ quantity: 5, reserved: 0, in_transit: 0 });

    // The delay timer on the transfer's test clock: nothing happens until the clock passes the end of the expected day.
    const late = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: {
      from_warehouse: shop.warehouseId, to_warehouse: second, items: [{ sku: 'TRF-2', quantity: 2 }], reference: 'LATE-1',
      expected_arrival: '2030-01-03', test_clock_time: '2030-01-01T00:00:00Z',
    } });
    expect(late.status, late.text).toBe(201);
    expect(late.body.delayed).toBe(false);
    const advance = (frozen_time: string, k = key) => http(`/v3/warehouses/transfers/${late.body.id}/test_clock/advance`, { key: k, body: { frozen_time } });
    let moved = await advance('2030-01-03T23:59:59Z');
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.delayed).toBe(false);
    expect(await eventsAbout(platform, late.body.id)).toEqual([]);
    moved = await advance('2030-01-04T00:00:00Z');
    expect(moved.body).toMatchObject({ id: late.body.id, delayed: true, status: 'reserved' });
    expect(await eventsAbout(platform, late.body.id)).toEqual(['warehouse.transfer.delayed']);
    expect((await advance('2030-02-01T00:00:00Z')).body.delayed).toBe(true); // once
    const back = await advance('2030-01-02T00:00:00Z');
    expect(back.status).toBe(422);
    expect(back.body.errors[0].path).toBe('frozen_time');
    const cancelled = await http(`/v3/warehouses/transfers/${late.body.id}/cancel`, { key, body: { reason: 'not needed' } });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancellation_reason: 'not needed' });
    expect(await level(platform, shop.warehouseId, 'TRF-2')).toEqual({ quantity: 5, reserved: 0, in_transit: 0 });
    expect(await eventsAbout(platform, late.body.id)).toEqual(['warehouse.transfer.delayed']);
    const finished = await advance('2030-03-01T00:00:00Z');
    expect(finished.status).toBe(409);
    expect(finished.body).toMatchObject({ code: 'invalid_state_transition', current_state: 'cancelled' });

    // A transfer without a clock runs on real time: nothing to advance. Live keys cannot have clocks.
    const real = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: second, items: [{ sku: 'TRF-2', quantity: 1 }], reference: 'REAL-1', expected_arrival: '2099-01-01' } });
    const noClock = await http(`/v3/warehouses/transfers/${real.body.id}/test_clock/advance`, { key, body: { frozen_time: '2099-01-02T00:00:00Z' } });
    expect(noClock.status).toBe(409);
    expect(noClock.body.code).toBe('no_test_clock');
    const live = await platform.newKey({ type: 'live' });
    const liveRes = await http('/v3/warehouses/transfer', { key: live, method: 'PUT', body: { from_warehouse: 'wh_x', to_warehouse: 'wh_y', items: [{ sku: 'TRF-2', quantity: 1 }], reference: 'LIVE-1', test_clock_time: '2030-01-01T00:00:00Z' } });
    expect(liveRes.status).toBe(403);
    expect(liveRes.body.code).toBe('test_mode_only');
    expect((await http(`/v3/warehouses/transfers/${real.body.id}/cancel`, { key, body: {} })).body.status).toBe('cancelled');
  });

  it('names every bad field: same warehouse, unknown warehouse and SKU, negative quantities, DD/MM/YYYY dates', async () => {
    const res = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: {
      from_warehouse: shop.warehouseId, to_warehouse: shop.warehouseId, items: [{ sku: 'TRF-1', quantity: -1 }], reference: 'BAD', expected_arrival: '01/02/2026',
    } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['expected_arrival', 'items.0.quantity']);
    const res2 = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: shop.warehouseId, items: [{ sku: 'NOPE', quantity: 1 }], reference: 'BAD' } });
    expect(res2.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['items.0.sku', 'to_warehouse']);
    const res3 = await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: 'wh_nope', to_warehouse: second, items: [{ sku: 'TRF-1', quantity: 1 }], reference: 'BAD' } });
    expect(res3.body.errors.map((e: { path: string }) => e.path)).toEqual(['from_warehouse']);
    expect((await http('/v3/warehouses/transfers/wtr_nope', { key })).status).toBe(404);
  });
});

describe('cycle counts (workflow cycle-count-<id>)', () => {
  it('freezes expected quantities, accounts for movements during the count, posts variances within tolerance', async () => {
    await stockedProduct(http, key, shop, 'CC-1', 0, { price: 500 });
    await stockedProduct(http, key, shop, 'CC-2', 0, { price: 500 });
    await stock(http, key, second, 'CC-1', 100, 'A-01-1');
    await stock(http, key, second, 'CC-2', 40, 'A-02-1');
    const res = await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: second, count_type: 'partial', skus: ['CC-1', 'CC-2'], tolerance: { percent: 5, value: 100_000 } } });
    expect(res.status, res.text).toBe(201);
    const cc = res.body;
    expect(cc).toMatchObject({ object: 'cycle_count', status: 'counting', workflow_id: `cycle-count-${cc.id}`, progress: { lines: 2, counted: 0, remaining: 2 } });
    // Shipped while counting: 10 units leave before the counter reaches the bin.
    await http(`/v3/warehouses/${second}/movements`, { key, body: { sku: 'CC-1', quantity: -10, reason: 'shipped' } });
    let r = await http(`/v3/warehouses/cycle-counts/${cc.id}/counts`, { key, body: { counts: [{ sku: 'CC-1', quantity: 88 }] } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.lines.find((l: { sku: string }) => l.sku === 'CC-1')).toMatchObject({ expected: 100, movements_during: -10, counted: 88, variance: -2, exceeds_tolerance: false });
    expect(r.body.progress).toEqual({ lines: 2, counted: 1, remaining: 1 });
    r = await http(`/v3/warehouses/cycle-counts/${cc.id}/counts`, { key, body: { counts: [{ sku: 'NOT-ON-IT', quantity: 1 }] } });
    expect(r.status).toBe(422);
    expect(r.body.errors[0].path).toBe('counts.0.sku');
    r = await http(`/v3/warehouses/cycle-counts/${cc.id}/counts`, { key, body: { counts: [{ sku: 'CC-2', quantity: 40 }] } });
    expect(r.body).toMatchObject({ status: 'completed', progress: { remaining: 0 } });
    expect(await level(platform, second, 'CC-1')).toMatchObject({ quantity: 88 });
    expect(await eventsAbout(platform, cc.id)).toEqual(['inventory.adjusted', 'cycle_count.completed']);
    const adj = (await http(`/v3/warehouses/${second}/movements?sku=CC-1&reason=cycle_count`, { key })).body.data;
    expect(adj).toEqual([expect.objectContaining({ reference: cc.id, quantity_before: 90, quantity_after: 88 })]);
  });

  it('takes a change committed but not yet numbered out of the expected quantity, and counts it as a movement during the count', async () => {
    await stockedProduct(http, key, shop, 'CC-P', 0, { price: 500 });
    await stock(http, key, second, 'CC-P', 50, 'A-03-1');
    const pending = async () => (await platform.sql<{ n: number }>(
      'select count(*)::int as n from stock_movements where account_id = $1 and livemode = false and seq is null', [accountId]))[0]!.n;
    await eventually(async () => (await pending()) === 0, 10_000, 'the ledger to be numbered');
    // Holding the account's counter row keeps the sequencers waiting: the next change stays unnumbered.
    const holder = new pg.Client({ connectionString: platform.dbUrl });
    await holder.connect();
    let cc: { id: string; lines: { sku: string; expected: number }[] };
    try {
      await holder.query('begin');
      await holder.query('select 1 from stock_sequences where account_id = $1 and livemode = false for update', [accountId]);
      expect((await http(`/v3/warehouses/${second}/movements`, { key, body: { sku: 'CC-P', quantity: -5, reason: 'shipped' } })).status).toBe(201);
      expect(await pending()).toBe(1);
      const res = await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: second, count_type: 'partial', skus: ['CC-P'] } });
      expect(res.status, res.text).toBe(201);
      cc = res.body;
    } finally {
      await holder.query('commit');
      await holder.end();
    }
    expect(cc.lines).toEqual([expect.objectContaining({ sku: 'CC-P', expected: 50 })]);
    await eventually(async () => (await pending()) === 0, 10_000, 'the change to be numbered');
    const r = await http(`/v3/warehouses/cycle-counts/${cc.id}/counts`, { key, body: { counts: [{ sku: 'CC-P', quantity: 45 }] } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.lines[0]).toMatchObject({ expected: 50, movements_during: -5, counted: 45, variance: 0 });
    expect(r.body.status).toBe('completed');
    expect(await level(platform, second, 'CC-P')).toMatchObject({ quantity: 45 });
  });

  it('asks for approval beyond tolerance (with its own permission), and escalates a count past its deadline once', async () => {
    await stockedProduct(http, key, shop, 'CC-3', 0, { price: 2000 });
    await stock(http, key, second, 'CC-3', 10);
    // The deadline on the count's test clock: seven days from the clock's start by default.
    const res = await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: second, count_type: 'partial', skus: ['CC-3'], test_clock_time: '2030-01-01T00:00:00Z' } });
    expect(res.status, res.text).toBe(201);
    const cc = res.body;
    expect(cc).toMatchObject({ deadline: '2030-01-08T00:00:00.000Z', overdue: false });
    const advance = (frozen_time: string) => http(`/v3/warehouses/cycle-counts/${cc.id}/test_clock/advance`, { key, body: { frozen_time } });
    let moved = await advance('2030-01-07T23:59:59Z');
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.overdue).toBe(false);
    expect(await eventsAbout(platform, cc.id)).toEqual([]);
    moved = await advance('2030-01-08T00:00:01Z');
    expect(moved.body).toMatchObject({ overdue: true, status: 'counting' });
    expect(await eventsAbout(platform, cc.id)).toEqual(['cycle_count.overdue']);
    expect((await advance('2030-03-01T00:00:00Z')).body.overdue).toBe(true);
    expect(await eventsAbout(platform, cc.id)).toEqual(['cycle_count.overdue']); // once
    let r = await http(`/v3/warehouses/cycle-counts/${cc.id}/counts`, { key, body: { counts: [{ sku: 'CC-3', quantity: 7 }] } });
    expect(r.body).toMatchObject({ status: 'pending_approval', overdue: true, lines: [{ variance: -3, variance_value: 6000, exceeds_tolerance: true }] });
    expect(await level(platform, second, 'CC-3')).toMatchObject({ quantity: 10 });
    const restricted = await platform.newKey({ type: 'restricted', permissions: ['warehouses:write'] });
    r = await http(`/v3/warehouses/cycle-counts/${cc.id}/approve`, { key: restricted, body: {} });
    expect(r.status).toBe(403);
    expect(r.body.required_permission).toBe('inventory_approvals:write');
    r = await http(`/v3/warehouses/cycle-counts/${cc.id}/approve`, { key, body: { note: 'recounted twice' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ status: 'completed', approved_by: expect.stringMatching(/^key:/), lines: [{ adjusted: -3 }] });
    expect(await level(platform, second, 'CC-3')).toMatchObject({ quantity: 7 });
    expect(await eventsAbout(platform, cc.id)).toEqual(['cycle_count.overdue', 'inventory.adjusted', 'cycle_count.completed']);
    expect((await http(`/v3/warehouses/cycle-counts/${cc.id}/approve`, { key, body: {} })).body.code).toBe('invalid_state_transition');
  });

  it('classifies SKUs by consumption value (ABC) and counts the ones due; refuses SKUs not stocked', async () => {
    const w = (await create(http, key, '/v3/warehouses', { name: 'ABC warehouse' })).id;
    const shipped: [string, number, number][] = [['ABC-1', 5000, 16], ['ABC-2', 1000, 12], ['ABC-3', 100, 5], ['ABC-4', 100, 0]];
    for (const [sku, price, qty] of shipped) {
      await stockedProduct(http, key, shop, sku, 0, { price });
      await stock(http, key, w, sku, 100);
      if (qty) {
        // Consumption is what orders shipped from this warehouse (the ledger's order_fulfillment rows).
        const order = await http('/v3/orders', { key, body: orderBody(shop, [{ sku, quantity: qty }]) });
        expect(order.status, order.text).toBe(201);
        expect(order.body.line_items[0].allocations).toEqual([{ warehouse_id: w, quantity: qty }]);
        const shipped = await http(`/v3/orders/${order.body.id}/fulfill`, { key, body: { tracking_number: 'T1', carrier: 'dhl' } });
        expect(shipped.status, shipped.text).toBe(200);
      }
    }
    const res = await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: w, count_type: 'abc_analysis' } });
    expect(res.status, res.text).toBe(201);
    const classes = Object.fromEntries(res.body.classification.map((c: { sku: string; abc_class: string }) => [c.sku, c.abc_class]));
    // 80000 / 92500 = 86.5 % → A; ABC-2 starts at 86.5 % → B; the rest C.
    expect(classes).toEqual({ 'ABC-1': 'A', 'ABC-2': 'B', 'ABC-3': 'C', 'ABC-4': 'C' });
    expect(res.body.lines.map((l: { sku: string }) => l.sku).sort()).toEqual(['ABC-1', 'ABC-2', 'ABC-3', 'ABC-4']);
    const bad = await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: w, count_type: 'partial', skus: ['ABC-1', 'LED-1'] } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'skus.1' })]);
    expect((await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: 'wh_nope', count_type: 'full' } })).body.errors[0].path).toBe('warehouse_id');
    const cancelled = await http(`/v3/warehouses/cycle-counts/${res.body.id}/cancel`, { key, body: { reason: 'wrong day' } });
    expect(cancelled.body.status).toBe('cancelled');
    expect((await http('/v3/warehouses/cycle-counts/cc_nope', { key })).status).toBe(404);
  });

  it('lists cycle counts newest first, paginated, filtered by warehouse and status, isolated per account and mode', async () => {
    const w = (await create(http, key, '/v3/warehouses', { name: 'List warehouse' })).id;
    await stockedProduct(http, key, shop, 'CCL-1', 0);
    await stock(http, key, w, 'CCL-1', 3);
    const start = async () => (await create(http, key, '/v3/warehouses/cycle-count', { warehouse_id: w, count_type: 'partial', skus: ['CCL-1'] })).id as string;
    const [a, b, c] = [await start(), await start(), await start()];
    expect((await http(`/v3/warehouses/cycle-counts/${b}/counts`, { key, body: { counts: [{ sku: 'CCL-1', quantity: 3 }] } })).body.status).toBe('completed');
    const list = (query: string, k = key) => http(`/v3/warehouses/cycle-counts${query}`, { key: k });

    let r = await list(`?warehouse_id=${w}&limit=2`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ object: 'list', has_more: true, url: '/v3/warehouses/cycle-counts' });
    expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([c, b]);
    expect(r.body.data[1]).toEqual((await http(`/v3/warehouses/cycle-counts/${b}`, { key })).body);
    expect(r.headers.get('link')).toContain('cursor=');
    r = await list(`?warehouse_id=${w}&limit=2&cursor=${r.body.next_cursor}`);
    expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([a]);
    expect(r.body.has_more).toBe(false);
    expect((await list(`?warehouse_id=${w}&sort=created_at`)).body.data.map((x: { id: string }) => x.id)).toEqual([a, b, c]);
    expect((await list(`?warehouse_id=${w}&status=completed`)).body.data.map((x: { id: string }) => x.id)).toEqual([b]);
    expect((await list(`?warehouse_id=${w}&status=counting`)).body.data.map((x: { id: string }) => x.id)).toEqual([c, a]);

    // Another account and live mode see none of them; bad filters are named.
    const other = await platform.newKey({ accountId: await platform.newAccount() });
    expect((await list('?limit=100', other)).body.data).toEqual([]);
    expect((await list(`?warehouse_id=${w}`, await platform.newKey({ type: 'live' }))).body.data).toEqual([]);
    r = await list('?status=done&limit=0');
    expect(r.status).toBe(422);
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['limit', 'status']);
    expect((await list('?cursor=garbage')).body.errors[0].path).toBe('cursor');
    for (const id of [a, c]) await http(`/v3/warehouses/cycle-counts/${id}/cancel`, { key, body: {} });
  });
});

describe('operations (admin tRPC)', () => {
  it('finds a transfer and a count, reads their live state, and steers them with the operator and reason recorded', async () => {
    const admin = createCallerFactory(adminRouter)(createContextInner({ orm: platform.orm, permissionScopes, temporal: platform.temporal, adminToken: 't', presentedToken: 't' }));
    await stockedProduct(http, key, shop, 'OPS-1', 0);
    await stock(http, key, shop.warehouseId, 'OPS-1', 10);
    const t = (await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: second, items: [{ sku: 'OPS-1', quantity: 4 }], reference: 'OPS-T' } })).body;
    const c = (await http('/v3/warehouses/cycle-count', { key, body: { warehouse_id: shop.warehouseId, count_type: 'partial', skus: ['OPS-1'] } })).body;
    const ref = { accountId, livemode: false };

    const seen = await admin.warehouses.inspect({ ...ref, id: t.id });
    expect(seen).toMatchObject({ resource: { id: t.id, status: 'reserved' }, state: { status: 'reserved', items: [{ sku: 'OPS-1', quantity: 4, received: 0 }] }, workflow: { id: `transfer-${t.id}`, status: 'RUNNING' } });
    const found = await eventually(async () => {
      const rows = await admin.warehouses.search({ accountId, resourceId: c.id, limit: 50 });
      return rows.length ? rows : undefined;
    }, 15_000, 'the count in visibility');
    expect(found).toEqual([expect.objectContaining({ workflow_id: `cycle-count-${c.id}`, type: 'cycleCountWorkflow' })]);

    await expect(admin.warehouses.cancelTransfer({ ...ref, id: t.id, operator: 'ops@example.com', reason: '' })).rejects.toThrow();
    const cancelled = await admin.warehouses.cancelTransfer({ ...ref, id: t.id, operator: 'ops@example.com', reason: 'duplicate request' });
    expect(cancelled.status).toBe('cancelled');
    expect(await level(platform, shop.warehouseId, 'OPS-1')).toMatchObject({ reserved: 0 });
    await http(`/v3/warehouses/cycle-counts/${c.id}/counts`, { key, body: { counts: [{ sku: 'OPS-1', quantity: 1 }] } });
    const closed = await admin.warehouses.forceCloseCycleCount({ ...ref, id: c.id, operator: 'lead@example.com', reason: 'posting the recount' });
    expect(closed).toMatchObject({ status: 'completed', lines: [{ adjusted: -9 }] });
    const after = await admin.warehouses.inspect({ ...ref, id: c.id });
    expect(after.actions).toEqual([expect.objectContaining({ action: 'force_close', operator: 'lead@example.com', reason: 'posting the recount' })]);
    const moved = (await http(`/v3/warehouses/${shop.warehouseId}/movements?sku=OPS-1&reason=cycle_count`, { key })).body.data[0];
    expect(moved).toMatchObject({ actor: 'admin:lead@example.com', reference: c.id });
    // Another account's resource is not found under this account.
    await expect(admin.warehouses.inspect({ accountId: await platform.newAccount(), livemode: false, id: t.id })).rejects.toThrow(/No transfer/);
  });
});
