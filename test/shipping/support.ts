import { expect } from 'vitest';
import { signSandboxPush } from '../../domain/shipping/carriers/sandbox.ts';
import { create, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';
import type { Http } from '../support/use-platform.ts';

export const ORIGIN = { address: '1 Dock Rd', city: 'Newark', country: 'US', postal_code: '07102' };
export const DESTINATION = { address: '12 Elm St', city: 'Springfield', country: 'US', postal_code: '62701' };
export const PACKAGE = { weight: 2, dimensions: { length: 30, width: 20, height: 15 }, value: 4500 };

let skuCounter = 0;

/** A shop with one stocked product, and a processing order of it. */
export async function newOrder(http: Http, key: string, shop?: Shop): Promise<{ shop: Shop; orderId: string }> {
  const s = shop ?? await openShop(http, key);
  const sku = `SHIP-${process.pid}-${++skuCounter}`;
  await stockedProduct(http, key, s, sku, 10);
  const order = await create(http, key, '/v3/orders', orderBody(s, [{ sku, quantity: 1 }]));
  return { shop: s, orderId: order.id };
}

export async function newClock(http: Http, key: string, at: string): Promise<string> {
  return (await create(http, key, '/v3/shipping/test_clocks', { frozen_time: at })).id;
}

export async function advance(http: Http, key: string, clock: string, to: string): Promise<void> {
  const res = await http(`/v3/shipping/test_clocks/${clock}/advance`, { key, body: { frozen_time: to } });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toMatchObject({ status: 'ready', frozen_time: new Date(to).toISOString() });
}

export function shipmentBody(orderId: string, extra: Record<string, unknown> = {}) {
  return { order_id: orderId, origin: ORIGIN, destination: DESTINATION, packages: [PACKAGE], service_level: 'ground', carrier: 'parcelpoint', ...extra };
}

export async function ship(http: Http, key: string, orderId: string, extra: Record<string, unknown> = {}): Promise<any> {
  return create(http, key, '/v3/shipping/create', shipmentBody(orderId, extra));
}

export async function shipment(http: Http, key: string, id: string): Promise<any> {
  const res = await http(`/v3/shipping/${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

export async function tracking(http: Http, key: string, id: string): Promise<any> {
  const res = await http(`/v3/shipping/${id}/track`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** A signed sandbox push, as the carrier sends it. */
export function signedPush(carrier: string, body: Record<string, unknown>, at = Date.now()): { rawBody: string; headers: Record<string, string> } {
  const rawBody = JSON.stringify(body);
  return { rawBody, headers: { 'content-type': 'application/json', 'bp-carrier-signature': signSandboxPush(carrier, rawBody, Math.floor(at / 1000)) } };
}

/** Polls until `check` returns a value. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
