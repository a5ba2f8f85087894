import { expect } from 'vitest';
import type { client } from '../support/http.ts';

export type Http = ReturnType<typeof client>;

export function card(number = '4242424242424242') {
  return { type: 'card', card: { number, exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' } };
}

export async function newCustomer(http: Http, key: string): Promise<string> {
  const res = await http('/v3/customers', { key, body: { email: `c${Math.random().toString(36).slice(2)}@example.com`, name: 'Sub Scriber' } });
  expect(res.status).toBe(201);
  return res.body.id;
}

export async function newPlan(http: Http, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await http('/v3/plans', { key, body: { name: 'Pro', currency: 'USD', interval: 'monthly', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function newClock(http: Http, key: string, at: string): Promise<string> {
  const res = await http('/v3/test_clocks', { key, body: { frozen_time: at } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** Advances the clock; the call returns once every subscription on it has billed up to `to`. */
export async function advance(http: Http, key: string, clock: string, to: string): Promise<any> {
  const res = await http(`/v3/test_clocks/${clock}/advance`, { key, body: { frozen_time: to } });
  expect(res.status, res.text).toBe(200);
  expect(res.body.status).toBe('ready');
  return res.body;
}

export async function invoices(http: Http, key: string, subscriptionId: string): Promise<any[]> {
  const res = await http(`/v3/invoices?subscription_id=${subscriptionId}&limit=100&sort=created_at`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

export async function subscription(http: Http, key: string, id: string): Promise<any> {
  const res = await http(`/v3/subscriptions/${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}
