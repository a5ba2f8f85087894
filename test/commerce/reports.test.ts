import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { create, openShop, orderBody, stockedProduct, useShopPlatform, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({ worker: true }, (t) => ({ platform, http, key, shop } = t));

async function orderAt(createdAt: string, lines: { sku: string; quantity: number }[], currency = 'USD'): Promise<string> {
  const res = await http('/v3/orders', { key, body: orderBody(shop, lines, { currency }) });
  expect(res.status).toBe(201);
  await platform.sql('update orders set created_at = $2 where id = $1', [res.body.id, createdAt]);
  return res.body.id;
}

describe('GET /v3/reports/sales-summary', () => {
  beforeAll(async () => {
    await create(http, key, `/v3/stores/${shop.storeId}/products`, { name: 'Tea', sku: 'TEA', price: 1000, prices: { JPY: 1500 }, inventory: { track_quantity: false } });
    // Europe/Berlin leaves CET (+01:00) for CEST (+02:00) at 2025-03-30T01:00:00Z.
    await orderAt('2025-03-29T22:30:00Z', [{ sku: 'TEA', quantity: 1 }]); // 23:30 CET, 29 March
    await orderAt('2025-03-29T23:30:00Z', [{ sku: 'TEA', quantity: 2 }]); // 00:30 CET, 30 March
    await orderAt('2025-03-30T21:30:00Z', [{ sku: 'TEA', quantity: 1 }]); // 23:30 CEST, 30 March
    await orderAt('2025-03-30T22:30:00Z', [{ sku: 'TEA', quantity: 3 }]); // 00:30 CEST, 31 March (a fixed +01:00 says 30 March)
    await orderAt('2025-03-31T10:00:00Z', [{ sku: 'TEA', quantity: 1 }], 'JPY');
    const canceled = await orderAt('2025-03-30T12:00:00Z', [{ sku: 'TEA', quantity: 5 }]);
    const cancel = await http(`/v3/orders/${canceled}/cancel`, { key, body: {} });
    expect([cancel.status, cancel.body.status]).toEqual([200, 'canceled']);
  });

  it('cuts days in the named zone, correctly across the DST change', async () => {
    const res = await http('/v3/reports/sales-summary?start_date=2025-03-29&end_date=2025-03-31&timezone=Europe/Berlin', { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'sales_summary', timezone: 'Europe/Berlin', start_date: '2025-03-29', end_date: '2025-03-31' });
    expect(res.body.days).toEqual([
      { date: '2025-03-29', orders: 1, units: 1, canceled_orders: 0, gross_sales: { USD: 1000 } },
      { date: '2025-03-30', orders: 2, units: 3, canceled_orders: 1, gross_sales: { USD: 3000 } },
      { date: '2025-03-31', orders: 2, units: 4, canceled_orders: 0, gross_sales: { USD: 3000, JPY: 1500 } },
    ]);
    expect(res.body.totals).toEqual({
      orders: 5, units: 8, canceled_orders: 1, gross_sales: { USD: 7000, JPY: 1500 }, average_order_value: { USD: 1750, JPY: 1500 },
    });
  });

  it('gives different days in UTC, includes empty days, and filters by currency', async () => {
    const utc = await http('/v3/reports/sales-summary?start_date=2025-03-28&end_date=2025-03-31', { key });
    expect(utc.body.timezone).toBe('UTC');
    expect(utc.body.days.map((d: any) => [d.date, d.orders])).toEqual([['2025-03-28', 0], ['2025-03-29', 2], ['2025-03-30', 2], ['2025-03-31', 1]]);
    const jpy = await http('/v3/reports/sales-summary?start_date=2025-03-29&end_date=2025-03-31&timezone=Europe/Berlin&currency=JPY', { key });
    expect(jpy.body.totals).toMatchObject({ orders: 1, gross_sales: { JPY: 1500 } });
  });

  it('rejects unknown zones, reversed ranges and DD/MM/YYYY dates', async () => {
    const zone = await http('/v3/reports/sales-summary?start_date=2025-03-29&end_date=2025-03-31&timezone=Mars/Olympus', { key });
    expect(zone.status).toBe(422);
    expect(zone.body.errors[0].path).toBe('timezone');
    const reversed = await http('/v3/reports/sales-summary?start_date=2025-03-29&end_date=2025-03-01', { key });
    expect([reversed.status, reversed.body.code, reversed.body.errors[0].path]).toEqual([422, 'validation_failed', 'end_date']);
    const dmy = await http('/v3/reports/sales-summary?start_date=29/03/2025&end_date=2025-03-31', { key });
    expect(dmy.body.errors[0].message).toContain('2025-03-29');
  });
});

describe('GET /v3/reports/sales-summary: average order value', () => {
  it('rounds half-even: an even quotient keeps the half down, an odd one goes up', async () => {
    for (const [sku, price] of [['AOV-1000', 1000], ['AOV-1001', 1001], ['AOV-1002', 1002]] as const) {
      await create(http, key, `/v3/stores/${shop.storeId}/products`, { name: sku, sku, price, inventory: { track_quantity: false } });
    }
    await orderAt('2025-06-02T12:00:00Z', [{ sku: 'AOV-1000', quantity: 1 }]);
    await orderAt('2025-06-02T13:00:00Z', [{ sku: 'AOV-1001', quantity: 1 }]); // 2001 / 2 = 1000.5 → 1000
    await orderAt('2025-06-03T12:00:00Z', [{ sku: 'AOV-1001', quantity: 1 }]);
    await orderAt('2025-06-03T13:00:00Z', [{ sku: 'AOV-1002', quantity: 1 }]); // 2003 / 2 = 1001.5 → 1002
    await orderAt('2025-06-04T12:00:00Z', [{ sku: 'AOV-1001', quantity: 1 }]);
    await orderAt('2025-06-04T13:00:00Z', [{ sku: 'AOV-1002', quantity: 2 }]); // 3005 / 2 = 1502.5 → 1502
    const average = async (day: string) =>
      (await http(`/v3/reports/sales-summary?start_date=${day}&end_date=${day}`, { key })).body.totals.average_order_value;
    expect(await average('2025-06-02')).toEqual({ USD: 1000 });
    expect(await average('2025-06-03')).toEqual({ USD: 1002 });
    expect(await average('2025-06-04')).toEqual({ USD: 1502 });
  });
});

describe('GET /v3/marketplace/{marketplace}/listings', () => {
  it('syncs the catalog through a sandbox adapter and lists the listings', async () => {
    const mp = await openShop(http, key);
    await stockedProduct(http, key, mp, 'MP-IN', 4, { price: 2500 });
    await stockedProduct(http, key, mp, 'MP-OUT', 0, { price: 900 });
    const sync = await http('/v3/marketplace/amazon/listings/sync', { key, body: { store_id: mp.storeId } });
    expect(sync.status).toBe(200);
    expect(sync.body).toMatchObject({ object: 'marketplace_sync', marketplace: 'amazon', listed: 2, active: 1, out_of_stock: 1, suppressed: 0 });
    const list = await http('/v3/marketplace/amazon/listings?sort=created_at', { key });
    expect(list.status).toBe(200);
    const bySku = Object.fromEntries(list.body.data.map((l: any) => [l.sku, l]));
    expect(bySku['MP-IN']).toMatchObject({ object: 'marketplace_listing', marketplace: 'amazon', price: 2500, currency: 'USD', quantity: 4, status: 'active' });
    expect(bySku['MP-IN'].external_id).toMatch(/^B0[A-Z0-9]{8}$/);
    expect(bySku['MP-OUT']).toMatchObject({ quantity: 0, status: 'out_of_stock' });

    // A JPY marketplace needs a JPY price or a rate; without one the listing is suppressed, with the reason.
    const jp = await http('/v3/marketplace/rakuten/listings/sync', { key, body: { store_id: mp.storeId } });
    expect(jp.body.suppressed).toBe(2);
    const suppressed = (await http('/v3/marketplace/rakuten/listings?sku=MP-IN', { key })).body.data[0];
    expect(suppressed).toMatchObject({ status: 'suppressed', currency: 'JPY' });
    expect(suppressed.issues[0]).toContain('JPY');
    await http('/v3/catalog/exchange-rates', { key, method: 'PUT', body: { base: 'USD', rates: { JPY: '150' } } });
    await http('/v3/marketplace/rakuten/listings/sync', { key, body: { store_id: mp.storeId } });
    const listed = (await http('/v3/marketplace/rakuten/listings?sku=MP-IN', { key })).body.data;
    expect(listed).toEqual([expect.objectContaining({ id: suppressed.id, status: 'active', price: 3750, currency: 'JPY' })]);
  });

  it('answers an unknown marketplace with 404 naming the supported ones', async () => {
    const res = await http('/v3/marketplace/shopee/listings', { key });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('marketplace_not_supported');
    expect(res.body.supported_marketplaces).toEqual(['amazon', 'ebay', 'etsy', 'rakuten']);
    expect(res.body.detail).toContain('amazon, ebay, etsy, rakuten');
  });
});
