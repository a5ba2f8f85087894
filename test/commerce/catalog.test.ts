import { beforeAll, describe, expect, it } from 'vitest';
import { convertMinorUnits, exponent, toDecimalString, toMinorUnits } from '../../domain/money.ts';
import { create } from './support.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let http: Http;
let key: string;
let storeId: string;

usePlatform({}, async (t) => {
  ({ http, key } = t);
  storeId = (await create(http, key, '/v3/stores', { name: 'Catalog shop', default_currency: 'USD' })).id;
});

describe('money helper', () => {
  it('knows currency exponents and rounds decimal strings half-even', () => {
    expect([exponent('JPY'), exponent('KWD'), exponent('usd'), exponent('EUR')]).toEqual([0, 3, 2, 2]);
    expect(toMinorUnits('0.125', 'USD')).toBe(12);
    expect(toMinorUnits('0.135', 'USD')).toBe(14);
    expect(toMinorUnits('1234.5', 'JPY')).toBe(1234);
    expect(toMinorUnits('1.0005', 'KWD')).toBe(1000);
    expect(toDecimalString(5, 'KWD')).toBe('0.005');
    expect(toDecimalString(1999, 'USD')).toBe('19.99');
    expect(convertMinorUnits(1001, 'USD', 'JPY', '150')).toBe(1502);
    expect(convertMinorUnits(1003, 'USD', 'JPY', '150')).toBe(1504);
  });
});

describe('stores and products', () => {
  it('creates a store and lists it', async () => {
    const list = await http('/v3/stores', { key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: { id: string }) => s.id)).toContain(storeId);
    const one = await http(`/v3/stores/${storeId}`, { key });
    expect(one.body).toMatchObject({ object: 'store', name: 'Catalog shop', default_currency: 'USD', fulfillment_deadline_seconds: 172800 });
  });

  it('creates a product with every spec field', async () => {
    const res = await http(`/v3/stores/${storeId}/products`, {
      key,
      body: {
        name: 'Espresso machine', sku: 'ESP-100', price: 49900, currency: 'usd', categories: ['kitchen', 'coffee'],
        variants: [{ name: 'Steel', price: 52900, features: ['steam wand'] }, { name: 'Black', price: 49900, features: [] }],
        inventory: { track_quantity: true, unlimited: false }, metadata: { supplier: 'acme' },
      },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v3/products/${res.body.id}`);
    expect(res.body).toMatchObject({
      object: 'product', store_id: storeId, sku: 'ESP-100', price: 49900, currency: 'USD', categories: ['kitchen', 'coffee'],
      variants: [{ name: 'Steel', price: 52900, features: ['steam wand'] }, { name: 'Black', price: 49900, features: [] }],
      inventory: { track_quantity: true, unlimited: false, reorder_point: 0, safety_stock: 0 }, active: true, metadata: { supplier: 'acme' },
    });
    expect(res.body.id).toMatch(/^prod_/);
    expect((await http(`/v3/products/${res.body.id}`, { key })).body).toEqual(res.body);
  });

  it('answers a duplicate SKU in the same store with 409, and allows it in another store', async () => {
    await create(http, key, `/v3/stores/${storeId}/products`, { name: 'Grinder', sku: 'GRD-1', price: 9900 });
    const dup = await http(`/v3/stores/${storeId}/products`, { key, body: { name: 'Grinder again', sku: 'GRD-1', price: 100 } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ code: 'sku_already_exists', sku: 'GRD-1', store_id: storeId });
    expect(dup.body.suggestion).toEqual(expect.any(String));
    const other = await create(http, key, '/v3/stores', { name: 'Second shop' });
    const sameSku = await http(`/v3/stores/${other.id}/products`, { key, body: { name: 'Grinder', sku: 'GRD-1', price: 100 } });
    expect([sameSku.status, sameSku.body.sku, sameSku.body.store_id]).toEqual([201, 'GRD-1', other.id]);
  });

  it('rejects fractional prices, unknown currencies and duplicate variant names, naming every field', async () => {
    const res = await http(`/v3/stores/${storeId}/products`, {
      key, body: { name: 'Bad', sku: 'BAD 1', price: 19.99, currency: 'XYZ', variants: [{ name: 'A', price: 1 }, { name: 'A', price: 2 }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['currency', 'price', 'sku', 'variants']);
  });

  it('404s an unknown store', async () => {
    const res = await http('/v3/stores/store_nope/products', { key, body: { name: 'X', sku: 'X-1', price: 1 } });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'not_found', detail: expect.stringContaining('store_nope') });
  });
});

describe('GET /v3/catalog/products (multi-currency)', () => {
  let shop: string;
  beforeAll(async () => {
    shop = (await create(http, key, '/v3/stores', { name: 'FX shop' })).id;
    await create(http, key, `/v3/stores/${shop}/products`, { name: 'Fixed yen', sku: 'FX-FIXED', price: 1999, prices: { JPY: 3000 }, categories: ['fx'] });
    await create(http, key, `/v3/stores/${shop}/products`, {
      name: 'Converted', sku: 'FX-CONV', price: 1001, categories: ['fx'], variants: [{ name: 'Big', price: 1003, features: [] }],
    });
    await create(http, key, `/v3/stores/${shop}/products`, { name: 'Euro priced', sku: 'FX-EUR', price: 1000, currency: 'EUR', categories: ['fx'] });
    const rates = await http('/v3/catalog/exchange-rates', { key, method: 'PUT', body: { base: 'USD', rates: { JPY: '150', KWD: 0.30665 } } });
    expect(rates.status).toBe(200);
    expect(rates.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ base: 'USD', quote: 'KWD', rate: '0.30665' })]));
  });

  const catalog = async (currency: string) => {
    const res = await http(`/v3/catalog/products?store_id=${shop}&currency=${currency}&sort=created_at`, { key });
    expect(res.status).toBe(200);
    return Object.fromEntries(res.body.data.map((p: any) => [p.sku, p]));
  };

  it('prices in USD and JPY (zero decimals): fixed prices win, others convert with half-even rounding', async () => {
    const bySku = await catalog('USD,JPY');
    expect(bySku['FX-FIXED'].prices).toEqual([
      { currency: 'USD', amount: 1999, source: 'base', exchange_rate: null, formatted: '19.99' },
      { currency: 'JPY', amount: 3000, source: 'fixed', exchange_rate: null, formatted: '3000' },
    ]);
    // 10.01 USD × 150 = 1501.5 JPY → 1502 (half to even); the 10.03 variant: 1504.5 → 1504.
    expect(bySku['FX-CONV'].prices[1]).toEqual({ currency: 'JPY', amount: 1502, source: 'converted', exchange_rate: '150', formatted: '1502' });
    expect(bySku['FX-CONV'].variants[0].prices[1]).toMatchObject({ currency: 'JPY', amount: 1504 });
    // No EUR→JPY rate: reported, not guessed.
    expect(bySku['FX-EUR'].prices[1]).toEqual({ currency: 'JPY', amount: null, source: 'unavailable', exchange_rate: null, formatted: null });
  });

  it('converts to a three-decimal currency and through the inverse of a stored rate', async () => {
    const kwd = await catalog('KWD');
    // 19.99 × 0.30665 = 6.1299335 KWD → 6.130
    expect(kwd['FX-FIXED'].prices[0]).toMatchObject({ currency: 'KWD', amount: 6130, formatted: '6.130' });
    await http('/v3/catalog/exchange-rates', { key, method: 'PUT', body: { base: 'EUR', rates: { USD: '1.08' } } });
    const eur = await catalog('EUR');
    // USD→EUR is not stored; EUR→USD 1.08 is: 19.99 / 1.08 = 18.5092… → 18.51
    expect(eur['FX-FIXED'].prices[0]).toMatchObject({ currency: 'EUR', amount: 1851, source: 'converted', exchange_rate: '1/1.08' });
    expect(eur['FX-EUR'].prices[0]).toMatchObject({ currency: 'EUR', amount: 1000, source: 'base' });
  });

  it('rejects an unsupported currency with the list of supported ones', async () => {
    const res = await http('/v3/catalog/products?currency=USD,ABC', { key });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].message).toContain('JPY');
  });
});

describe('GET /v3/legacy/products (deprecated)', () => {
  it('serves the old shape with Deprecation, Sunset and a successor link', async () => {
    const res = await http('/v3/legacy/products?per_page=100', { key });
    expect(res.status).toBe(200);
    const deprecation = res.headers.get('deprecation')!;
    expect(deprecation).toMatch(/^@\d+$/);
    const deprecatedAt = Number(deprecation.slice(1)) * 1000;
    expect(new Date(deprecatedAt).toISOString()).toBe('2024-12-01T00:00:00.000Z');
    const sunset = Date.parse(res.headers.get('sunset')!);
    expect(res.headers.get('sunset')).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(sunset).toBeGreaterThanOrEqual(deprecatedAt);
    expect(res.headers.get('link')).toContain('</v3/catalog/products>; rel="successor-version"');
    const espresso = res.body.products.find((p: any) => p.sku === 'ESP-100');
    expect(espresso).toEqual({
      product_id: expect.stringMatching(/^prod_/), store: storeId, title: 'Espresso machine', sku: 'ESP-100', price: '499.00',
      currency: 'USD', category: 'kitchen', in_stock: false,
    });
    expect(res.body).toMatchObject({ page: 1, per_page: 100, total: res.body.products.length });
  });
});
