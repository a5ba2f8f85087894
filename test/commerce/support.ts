import { expect } from 'vitest';
import { hashKey } from '../../domain/accounts/keys.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http, type PlatformContext, type UsePlatformOptions } from '../support/use-platform.ts';

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

/** The stock of `sku` summed over the warehouses of the key's account and mode (never another account's). */
export async function stockOf(platform: TestPlatform, key: string, sku: string): Promise<{ quantity: number; reserved: number }> {
  const rows = await platform.sql<{ quantity: number; reserved: number; keys: number }>(
    `select coalesce(sum(l.quantity), 0)::int as quantity, coalesce(sum(l.reserved), 0)::int as reserved,
            (select count(*)::int from api_keys where key_hash = $2) as keys
       from api_keys k join inventory_levels l on l.account_id = k.account_id and l.livemode = k.livemode
      where k.key_hash = $2 and l.sku = $1`, [sku, hashKey(key)]);
  if (rows[0]!.keys !== 1) throw new Error('stockOf: the key is not one of this platform\'s keys');
  return { quantity: rows[0]!.quantity, reserved: rows[0]!.reserved };
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

export interface ShopContext extends PlatformContext {
  shop: Shop;
}

/**
 * A test platform for the file (usePlatform) with an open shop, and in its store the `products`
 * given: what the commerce and CRM test files start from.
 */
export function useShopPlatform(
  opts: UsePlatformOptions & { products?: Record<string, unknown>[] },
  ready: (t: ShopContext) => unknown,
): void {
  usePlatform(opts, async (t) => {
    const shop = await openShop(t.http, t.key);
    for (const product of opts.products ?? []) await create(t.http, t.key, `/v3/stores/${shop.storeId}/products`, product);
    await ready({ ...t, shop });
  });
}
