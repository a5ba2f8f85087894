import { describe, expect, it } from 'vitest';
import { engagementScore, lifecycleStage } from '../../domain/crm/journey.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { Http } from '../support/use-platform.ts';
import { create, eventually, orderBody, useShopPlatform, type Shop } from '../commerce/support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let shop: Shop;

useShopPlatform({
  worker: true, products: [{ name: 'Plan', sku: 'PLAN', price: 2500, prices: { JPY: 3000 }, inventory: { track_quantity: false } }],
}, (t) => ({ platform, http, key, shop } = t));

const DAY = 86_400_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString();
const journey = async (customerId: string, query = '') => {
  const res = await http(`/v3/customers/${customerId}/journey${query}`, { key });
  expect(res.status).toBe(200);
  return res.body;
};
const order = async (customerId: string, extra: Record<string, unknown> = {}) => {
  const res = await http('/v3/orders', { key, body: { ...orderBody(shop, [{ sku: 'PLAN', quantity: 1 }]), customer_id: customerId, ...extra } });
  expect(res.status).toBe(201);
  return res.body;
};

describe('journey rules (pure)', () => {
  const now = new Date('2025-06-01T00:00:00Z');
  it('weighs touchpoints by type, direction and a 30-day half-life, capped at 100', () => {
    expect(engagementScore([{ timestamp: '2025-05-02T00:00:00Z', type: 'meeting', source: 'crm', ref: 'a' }], now)).toBe(6);
    expect(engagementScore([{ timestamp: '2025-06-01T00:00:00Z', type: 'call', source: 'crm', direction: 'inbound', ref: 'b' }], now)).toBe(12);
    expect(engagementScore(Array.from({ length: 6 }, (_, i) => ({ timestamp: '2025-06-01T00:00:00Z', type: 'purchase', source: null, ref: `o${i}` })), now)).toBe(100);
  });
  it('derives the lifecycle stage by the documented rules', () => {
    const facts = { touchpoints: 0, lastSeenMs: null, paid: 0, paidLastYear: 0, signals: [] as const };
    const ago = (days: number) => now.getTime() - days * DAY;
    expect(lifecycleStage(facts, now)).toBe('subscriber');
    expect(lifecycleStage({ ...facts, touchpoints: 1, lastSeenMs: ago(2) }, now)).toBe('lead');
    expect(lifecycleStage({ ...facts, touchpoints: 1, lastSeenMs: ago(2), signals: ['recent_meeting'] }, now)).toBe('opportunity');
    expect(lifecycleStage({ ...facts, touchpoints: 1, lastSeenMs: ago(2), signals: ['open_order'] }, now)).toBe('opportunity');
    expect(lifecycleStage({ ...facts, touchpoints: 1, lastSeenMs: ago(10), paid: 1, paidLastYear: 1 }, now)).toBe('customer');
    expect(lifecycleStage({ ...facts, touchpoints: 3, lastSeenMs: ago(10), paid: 4, paidLastYear: 3 }, now)).toBe('loyal');
    expect(lifecycleStage({ ...facts, touchpoints: 1, lastSeenMs: ago(200), paid: 1, paidLastYear: 1 }, now)).toBe('churned');
  });
});

describe('GET /v3/customers/{id}/journey on a known history', () => {
  it('starts as a subscriber with nothing recorded', async () => {
    const c = await create(http, key, '/v3/customers', { email: 'new@example.com', name: 'New' });
    expect(await journey(c.id)).toMatchObject({
      object: 'customer_journey', customer_id: c.id, lifecycle_stage: 'subscriber', total_ltv: 0, currency: 'USD', engagement_score: 0, touchpoints: [],
    });
  });

  it('adds touchpoints, interactions and orders into the documented numbers', async () => {
    const c = await create(http, key, '/v3/customers', { email: 'ada@example.com', name: 'Ada' });
    const visit = await http(`/v3/customers/${c.id}/touchpoints`, { key, body: { type: 'website_visit', source: 'google', url: 'https://shop.example/pricing' } });
    expect(visit.status).toBe(201);
    expect((await journey(c.id)).lifecycle_stage).toBe('lead');

    const meeting = await http(`/v3/customers/${c.id}/interactions`, { key, body: { type: 'meeting', direction: 'outbound', notes: 'Demo', occurred_at: daysAgo(30) } });
    expect(meeting.status).toBe(201);
    expect(meeting.body).toMatchObject({ object: 'interaction', type: 'meeting', direction: 'outbound', notes: 'Demo', customer_id: c.id });
    await http(`/v3/customers/${c.id}/interactions`, { key, body: { type: 'call', direction: 'inbound', notes: 'Asked about pricing' } });
    let j = await journey(c.id);
    expect(j.lifecycle_stage).toBe('opportunity');
    expect(j.engagement_score).toBe(20); // visit 2 + meeting 12 × ½ + inbound call 8 × 1.5

    await order(c.id, { payment_status: 'paid' }); // 25.00 USD, paid
    await order(c.id); // unpaid: a touchpoint, not LTV
    const canceled = await order(c.id, { payment_status: 'paid' });
    expect((await http(`/v3/orders/${canceled.id}/cancel`, { key, body: {} })).status).toBe(200);
    j = await journey(c.id);
    expect(j.lifecycle_stage).toBe('customer');
    expect(j.total_ltv).toBe(25); // the unpaid and the canceled orders do not count
    expect(j.engagement_score).toBe(60); // + two purchases × 20; a canceled order weighs 0

    const jpy = await order(c.id, { currency: 'JPY' });
    // Paid outside the platform: no payment of ours to point at (a payment_id must be a succeeded payment of this account).
    expect((await http(`/v3/orders/${jpy.id}/pay`, { key, body: {} })).body).toMatchObject({ payment_status: 'paid', payment_id: null });
    await http('/v3/catalog/exchange-rates', { key, method: 'PUT', body: { base: 'USD', rates: { JPY: '150' } } });
    j = await journey(c.id, '?currency=USD');
    expect(j).toMatchObject({ lifecycle_stage: 'customer', total_ltv: 45, currency: 'USD', engagement_score: 80, unconverted: [] }); // 3000 JPY / 150 = 20 USD
    const inYen = await journey(c.id);
    expect(inYen).toMatchObject({ currency: 'JPY', total_ltv: 6750 }); // default: the currency of the latest paid order
    expect(j.touchpoints.map((t: any) => t.type)).toEqual(['meeting', 'website_visit', 'call', 'purchase', 'purchase', 'order_canceled', 'purchase']);
    expect(j.touchpoints[3]).toMatchObject({ type: 'purchase', amount: 25, currency: 'USD', source: shop.storeId, ref: expect.stringMatching(/^ord_/) });
    expect(j.touchpoints[1]).toMatchObject({ type: 'website_visit', source: 'google' });
    expect(j.summary).toMatchObject({ touchpoints: 7, purchases: 3, paid_orders_and_invoices: 2, interactions: 2 });

    await order(c.id, { payment_status: 'paid' }); // a third paid order within a year
    j = await journey(c.id, '?currency=USD');
    expect(j).toMatchObject({ lifecycle_stage: 'loyal', total_ltv: 70, engagement_score: 100 }); // 100: the cap
  });

  it('lists interactions and records customer.updated whose metrics match the journey', async () => {
    const c = await create(http, key, '/v3/customers', { email: 'grace@example.com', name: 'Grace' });
    for (const type of ['email', 'chat', 'support_ticket'] as const) {
      await http(`/v3/customers/${c.id}/interactions`, { key, body: { type, direction: 'inbound', notes: type } });
    }
    const list = await http(`/v3/customers/${c.id}/interactions?type=chat,email`, { key });
    expect(list.body.data.map((i: any) => i.type)).toEqual(['chat', 'email']);
    const events = await eventually(async () => {
      const rows = await platform.sql<{ customer_metrics: any }>(
        `select customer_metrics from events where type = 'customer.updated' and customer_id = $1 and customer_metrics is not null order by id`, [c.id]);
      return rows.length === 3 ? rows : null;
    }, 20_000, 'customer metrics on the events');
    const j = await journey(c.id);
    expect(events.at(-1)!.customer_metrics).toEqual({ total_ltv: 0, engagement_score: j.engagement_score, lifecycle_stage: 'lead' });
    expect(j.engagement_score).toBe(19.5); // (4 + 5 + 4) × 1.5
  });

  it('marks a customer churned when the last paid order is old and nothing happened since', async () => {
    const c = await create(http, key, '/v3/customers', { email: 'old@example.com', name: 'Old' });
    const o = await order(c.id, { payment_status: 'paid' });
    await platform.sql('update orders set created_at = $2, paid_at = $2 where id = $1', [o.id, daysAgo(200)]);
    const j = await journey(c.id);
    expect(j).toMatchObject({ lifecycle_stage: 'churned', total_ltv: 25 });
    expect(j.engagement_score).toBe(0.2); // 20 × 0.5^(200/30) = 0.197
  });

  it('404s an unknown customer and rejects bad interaction fields', async () => {
    expect((await http('/v3/customers/cus_nope/journey', { key })).status).toBe(404);
    const c = await create(http, key, '/v3/customers', { email: 'x@example.com' });
    const bad = await http(`/v3/customers/${c.id}/interactions`, { key, body: { type: 'fax', direction: 'sideways' } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['direction', 'type']);
  });
});
