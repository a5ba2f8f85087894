import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { create, orderBody, stockOf, stockedProduct, useShopPlatform, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({ env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000', LOG_LEVEL: 'error' } }, (t) => ({ platform, http, key, shop } = t));

const put = (sku: string, body: Record<string, unknown>) => http(`/v3/inventory/${sku}/stock`, { key, method: 'PUT', body });

describe('warehouses', () => {
  it('creates, reads and lists warehouses; a duplicate code is 409', async () => {
    const w = await create(http, key, '/v3/warehouses', { name: 'Amsterdam', code: 'AMS-1', address: { city: 'Amsterdam', country: 'NL' } });
    expect(w).toMatchObject({ object: 'warehouse', name: 'Amsterdam', code: 'AMS-1', address: { city: 'Amsterdam', country: 'NL' } });
    expect((await http(`/v3/warehouses/${w.id}`, { key })).body).toEqual(w);
    expect((await http('/v3/warehouses', { key })).body.data.map((x: { id: string }) => x.id)).toContain(w.id);
    expect((await http('/v3/warehouses', { key, body: { name: 'Again', code: 'AMS-1' } })).body.code).toBe('warehouse_code_taken');
  });
});

describe('PUT /v3/inventory/{sku}/stock', () => {
  it('sets, adds and subtracts; never below zero (409 insufficient_stock, nothing changed)', async () => {
    await stockedProduct(http, key, shop, 'INV-A', 0);
    let res = await put('INV-A', { warehouse_id: shop.warehouseId, quantity: 10, operation: 'set', location: 'A-1' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'inventory_level', sku: 'INV-A', warehouse_id: shop.warehouseId, quantity: 10, reserved: 0, available: 10, location: 'A-1' });
    res = await put('INV-A', { warehouse_id: shop.warehouseId, quantity: 5, operation: 'add' });
    expect(res.body.quantity).toBe(15);
    res = await put('INV-A', { warehouse_id: shop.warehouseId, quantity: 15, operation: 'subtract' });
    expect(res.body).toMatchObject({ quantity: 0, available: 0 });
    res = await put('INV-A', { warehouse_id: shop.warehouseId, quantity: 1, operation: 'subtract' });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'insufficient_stock', errors: [{ path: 'quantity' }] });
    expect(res.body.errors[0].message).toContain('available: 0');
    expect(await stockOf(platform, key, 'INV-A')).toEqual({ quantity: 0, reserved: 0 });
  });

  it('keeps stock exact under 40 concurrent subtracts of one unit from 25', async () => {
    await stockedProduct(http, key, shop, 'INV-RACE', 25);
    const results = await Promise.all(Array.from({ length: 40 }, () => put('INV-RACE', { warehouse_id: shop.warehouseId, quantity: 1, operation: 'subtract' })));
    expect(results.filter((r) => r.status !== 200 && r.status !== 409).map((r) => r.text)).toEqual([]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(25);
    expect(results.filter((r) => r.status === 409)).toHaveLength(15);
    expect(await stockOf(platform, key, 'INV-RACE')).toEqual({ quantity: 0, reserved: 0 });
  });

  it('404s an unknown SKU and names an unknown warehouse', async () => {
    expect((await http('/v3/inventory/NO-SUCH/stock', { key })).status).toBe(404);
    const res = await put('NO-SUCH', { warehouse_id: 'wh_nope', quantity: 1, operation: 'set' });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['sku', 'warehouse_id']);
  });

  it('records inventory.low_stock once when available stock falls to the reorder point', async () => {
    await stockedProduct(http, key, shop, 'INV-LOW', 0, { inventory: { reorder_point: 3 } });
    await put('INV-LOW', { warehouse_id: shop.warehouseId, quantity: 10, operation: 'set' });
    await put('INV-LOW', { warehouse_id: shop.warehouseId, quantity: 6, operation: 'subtract' }); // 4: above
    await put('INV-LOW', { warehouse_id: shop.warehouseId, quantity: 1, operation: 'subtract' }); // 3: at the point
    await put('INV-LOW', { warehouse_id: shop.warehouseId, quantity: 1, operation: 'subtract' }); // 2: still low, no repeat
    const events = await platform.sql<{ data: any }>(`select data from events where type = 'inventory.low_stock' and data->'object'->>'sku' = 'INV-LOW'`);
    expect(events).toHaveLength(1);
    expect(events[0]!.data.object).toMatchObject({ object: 'inventory_level', sku: 'INV-LOW', available: 3, reorder_point: 3, warehouse_id: shop.warehouseId });
  });

  it('records it when orders reserve down to the reorder point, once, alike when the order reserved last or first', async () => {
    const second = await create(http, key, '/v3/warehouses', { name: 'Second' });
    // INV-ORD-A: all units in one warehouse, so an order plans it and reserves it last, with its
    // writes in one round trip (the event in SQL); INV-ORD-B: split over two, so an order reserves
    // it first, warehouse by warehouse (reserveAt, the same statement answering instead of failing).
    // INV-ORD-C's event comes from a stock update (noteLowStock, in TypeScript): the object all three share.
    await stockedProduct(http, key, shop, 'INV-ORD-A', 4, { inventory: { reorder_point: 1 } });
    await stockedProduct(http, key, shop, 'INV-ORD-B', 3, { inventory: { reorder_point: 1 } });
    await put('INV-ORD-B', { warehouse_id: second.id, quantity: 3, operation: 'set' });
    const order = async (sku: string, quantity: number) => {
      const res = await http('/v3/orders', { key, body: orderBody(shop, [{ sku, quantity }]) });
      expect(res.status, res.text).toBe(201);
      return res.body;
    };
    const crossing = await order('INV-ORD-A', 3); // 4 → 1 available: crosses
    await order('INV-ORD-A', 1); // 1 → 0: still low, no repeat
    await order('INV-ORD-B', 4); // 3 + 3 → one warehouse emptied (crosses), 1 taken from the other (2 left: above)
    const lowStock = (sku: string) => platform.sql<{ data: any; request_id: string | null }>(
      `select data, request_id from events where type = 'inventory.low_stock' and data->'object'->>'sku' = $1`, [sku]);
    const [a, more] = await lowStock('INV-ORD-A');
    expect(more).toBeUndefined();
    expect(a!.data).toEqual({
      object: {
        object: 'inventory_level', sku: 'INV-ORD-A', warehouse_id: shop.warehouseId, quantity: 4, reserved: 3, available: 1,
        safety_stock: 0, reorder_point: 1, location: null, last_updated: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), livemode: false,
      },
    });
    expect(a!.request_id).toMatch(/^req_/);
    const b = await lowStock('INV-ORD-B');
    expect(b).toHaveLength(1);
    const shape = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === null ? 'null' : typeof v]));
    expect(shape(b[0]!.data.object)).toEqual(shape(a!.data.object));
    expect(b[0]!.data.object).toMatchObject({ sku: 'INV-ORD-B', available: 0, reorder_point: 1 });
    await stockedProduct(http, key, shop, 'INV-ORD-C', 3, { inventory: { reorder_point: 1 } });
    await put('INV-ORD-C', { warehouse_id: shop.warehouseId, quantity: 2, operation: 'subtract' });
    const [c] = await lowStock('INV-ORD-C');
    expect(shape(c!.data.object)).toEqual(shape(a!.data.object));
    expect(c!.data.object).toMatchObject({ sku: 'INV-ORD-C', available: 1, reorder_point: 1, livemode: false });
    expect((await stockOf(platform, key, 'INV-ORD-A'))).toEqual({ quantity: 4, reserved: 4 });
    expect(crossing.line_items[0].allocations).toEqual([{ warehouse_id: shop.warehouseId, quantity: 3 }]);
  });
});

describe('POST /v3/inventory/bulk-update', () => {
  it('applies every item in one transaction', async () => {
    await stockedProduct(http, key, shop, 'BULK-1', 0);
    await stockedProduct(http, key, shop, 'BULK-2', 0);
    const res = await http('/v3/inventory/bulk-update', {
      key,
      body: { items: [
        { sku: 'BULK-1', warehouse_id: shop.warehouseId, quantity: 7, operation: 'set' },
        { sku: 'BULK-2', warehouse_id: shop.warehouseId, quantity: 3, operation: 'add' },
        { sku: 'BULK-1', warehouse_id: shop.warehouseId, quantity: 2, operation: 'subtract' },
      ] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'inventory_bulk_update', updated: 3 });
    expect(await stockOf(platform, key, 'BULK-1')).toEqual({ quantity: 5, reserved: 0 });
    expect(await stockOf(platform, key, 'BULK-2')).toEqual({ quantity: 3, reserved: 0 });
  });

  it('changes nothing when one item is bad, and lists every bad item', async () => {
    await stockedProduct(http, key, shop, 'BULK-BAD-1', 5);
    await stockedProduct(http, key, shop, 'BULK-BAD-2', 3);
    const before = [{ quantity: 5, reserved: 0 }, { quantity: 3, reserved: 0 }];
    expect([await stockOf(platform, key, 'BULK-BAD-1'), await stockOf(platform, key, 'BULK-BAD-2')]).toEqual(before);
    const res = await http('/v3/inventory/bulk-update', {
      key,
      body: { items: [
        { sku: 'BULK-BAD-1', warehouse_id: shop.warehouseId, quantity: 100, operation: 'add' },
        { sku: 'BULK-BAD-2', warehouse_id: shop.warehouseId, quantity: 4, operation: 'subtract' },
        { sku: 'BULK-BAD-1', warehouse_id: shop.warehouseId, quantity: 1000, operation: 'subtract' },
      ] },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('insufficient_stock');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['items.1.quantity', 'items.2.quantity']);
    expect([await stockOf(platform, key, 'BULK-BAD-1'), await stockOf(platform, key, 'BULK-BAD-2')]).toEqual(before);

    const mixed = await http('/v3/inventory/bulk-update', {
      key,
      body: { items: [
        { sku: 'BULK-BAD-1', warehouse_id: shop.warehouseId, quantity: 1, operation: 'add' },
        { sku: 'GHOST', warehouse_id: shop.warehouseId, quantity: 1, operation: 'add' },
        { sku: 'BULK-BAD-2', warehouse_id: shop.warehouseId, quantity: 99, operation: 'subtract' },
      ] },
    });
    expect(mixed.status).toBe(422);
    expect(mixed.body.errors.map((e: { path: string }) => e.path)).toEqual(['items.1.sku', 'items.2.quantity']);
    expect([await stockOf(platform, key, 'BULK-BAD-1'), await stockOf(platform, key, 'BULK-BAD-2')]).toEqual(before);
  });

  it('takes 1,000 items and refuses 1,001 with 422', async () => {
    const skus = Array.from({ length: 10 }, (_, i) => `BULK-K${i}`);
    for (const sku of skus) await stockedProduct(http, key, shop, sku, 0);
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ sku: skus[i % 10]!, warehouse_id: shop.warehouseId, quantity: 1, operation: 'add', location: `BIN-${i}` }));
    const ok = await http('/v3/inventory/bulk-update', { key, body: { items: items(1000) } });
    expect(ok.status).toBe(200);
    expect(ok.body.updated).toBe(1000);
    expect(await stockOf(platform, key, 'BULK-K0')).toEqual({ quantity: 100, reserved: 0 });
    const tooMany = await http('/v3/inventory/bulk-update', { key, body: { items: items(1001) } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.errors).toEqual([expect.objectContaining({ path: 'items', message: expect.stringContaining('1000') })]);
    expect(await stockOf(platform, key, 'BULK-K0')).toEqual({ quantity: 100, reserved: 0 });
  });
});
