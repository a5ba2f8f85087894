import { expect } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';

export { create, eventually, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';

/** The (quantity, reserved, in_transit) of one SKU in one warehouse, straight from the table. */
export async function level(platform: TestPlatform, warehouseId: string, sku: string) {
  const rows = await platform.sql<{ quantity: number; reserved: number; in_transit: number }>(
    'select quantity, reserved, in_transit from inventory_levels where warehouse_id = $1 and sku = $2', [warehouseId, sku]);
  return rows[0] ?? { quantity: 0, reserved: 0, in_transit: 0 };
}

/** Sets on-hand stock (commerce's stock endpoint) and a bin location. */
export async function stock(http: Http, key: string, warehouseId: string, sku: string, quantity: number, location?: string) {
  const res = await http(`/v3/inventory/${sku}/stock`, { key, method: 'PUT', body: { warehouse_id: warehouseId, quantity, operation: 'set', ...(location ? { location } : {}) } });
  expect(res.status, res.text).toBe(200);
}

/** Event types recorded about `id` (data.object.id), oldest first. */
export async function eventsAbout(platform: TestPlatform, id: string): Promise<string[]> {
  const rows = await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 or data->'object'->>'cycle_count_id' = $1 order by id`, [id]);
  return rows.map((r) => r.type);
}
