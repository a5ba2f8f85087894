import { expect } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

type Http = ReturnType<typeof client>;

/** Creates a resource and fails the test with the problem document if it is not created. */
export async function create(http: Http, key: string, path: string, body: unknown): Promise<any> {
  const res = await http(path, { key, body });
  if (res.status !== 201) throw new Error(`POST ${path} → ${res.status}: ${res.text}`);
  return res.body;
}

export interface Shop {
  storeId: string;
  warehouseId: string;
  customerId: string;
}

/** A store (with an optional fulfilment deadline), a warehouse and a customer. */
export async function openShop(http: Http, key: string, store: Record<string, unknown> = {}): Promise<Shop> {
  const s = await create(http, key, '/v3/stores', { name: 'Test shop', default_currency: 'USD', ...store });
  const w = await create(http, key, '/v3/warehouses', { name: 'Main warehouse' });
  const c = await create(http, key, '/v3/customers', { email: `buyer-${Math.random().toString(36).slice(2)}@example.com`, name: 'Buyer' });
  return { storeId: s.id, warehouseId: w.id, customerId: c.id };
}

/** A product with `stock` units in the shop's warehouse. */
export async function stockedProduct(http: Http, key: string, shop: Shop, sku: string, stock: number, product: Record<string, unknown> = {}): Promise<any> {
  const p = await create(http, key, `/v3/stores/${shop.storeId}/products`, { name: `Product ${sku}`, sku, price: 1000, ...product });
  if (stock > 0) {
    const res = await http(`/v3/inventory/${sku}/stock`, { key, method: 'PUT', body: { warehouse_id: shop.warehouseId, quantity: stock, operation: 'set' } });
    expect(res.status).toBe(200);
  }
  return p;
}

export function orderBody(shop: Shop, lines: { sku: string; quantity: number; variant?: string }[], extra: Record<string, unknown> = {}) {
  return {
    store_id: shop.storeId, customer_id: shop.customerId, currency: 'USD', line_items: lines,
    shipping_address: { name: 'Ada', line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
    ...extra,
  };
}

export async function stockOf(platform: TestPlatform, sku: string): Promise<{ quantity: number; reserved: number }> {
  const rows = await platform.sql<{ quantity: number; reserved: number }>(
    'select coalesce(sum(quantity), 0)::int as quantity, coalesce(sum(reserved), 0)::int as reserved from inventory_levels where sku = $1', [sku]);
  return rows[0]!;
}

/** Polls until `check` returns a value (time-driven behaviour finishes on its own schedule). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** A platform with a worker, a key and an open shop: what the commerce and CRM test files start from. */
export async function startShopPlatform(): Promise<{ platform: TestPlatform; http: Http; key: string; shop: Shop }> {
  const platform = await startTestPlatform({ worker: true });
  const http = client(platform.url);
  const key = await platform.newKey();
  return { platform, http, key, shop: await openShop(http, key) };
}
