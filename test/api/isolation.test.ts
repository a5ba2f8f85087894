import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v3Routes } from '../../domain/registry.ts';
import { advance, card, newClock, newPlan } from '../billing/support.ts';
import { create, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';
import { communicationsFactories } from '../communications/support.ts';
import { cardBody } from '../payments/support.ts';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { startReceiver, type Receiver } from '../webhooks/support/receiver.ts';

/**
 * Every route with a resource id in its path, derived from the route table: the owner's
 * resource is invisible (404 `not_found`) to a key of another account and to the owner's key of
 * the other mode, whatever the method, and the call changes nothing. A new area's route with an
 * id parameter fails the completeness check below until a factory for that parameter is added.
 */

let platform: TestPlatform;
let http: ReturnType<typeof client>;
let owner: string;
let ownerAccount: string;
let receiver: Receiver;

/** Path parameters that name no record of the caller's (nothing to hide), with the reason. */
const NOT_RESOURCE_IDS: Record<string, string> = {
  marketplace: 'a fixed marketplace name (amazon, ebay, …), the same for every account',
  messaging_app: 'a fixed messaging app name (whatsapp, sms, messenger), the same for every account',
  carrier: 'a fixed carrier name (parcelpoint, swiftex, …), the same for every account',
};

/** How each id parameter's resource is made with the owner's key; run once, in this order. */
type Ids = Record<string, string>;
type Factory = (ids: Ids) => Promise<string>;
let shop: Shop;
const FACTORIES: Record<string, Factory> = {
  customer_id: async () => shop.customerId,
  store_id: async () => shop.storeId,
  warehouse_id: async () => shop.warehouseId,
  sku: async () => 'ISO-SKU',
  product_id: async () => (await stockedProduct(http, owner, shop, 'ISO-SKU', 5, { price: 1000 })).id,
  order_id: async () => (await create(http, owner, '/v3/orders', orderBody(shop, [{ sku: 'ISO-SKU', quantity: 1 }]))).id,
  pick_list_id: async (ids) => (await create(http, owner, '/v3/warehouses/pick-lists', { order_ids: [ids.order_id], warehouse_id: shop.warehouseId })).id,
  transfer_id: async () => {
    const to = (await create(http, owner, '/v3/warehouses', { name: 'Isolation destination' })).id;
    const res = await http('/v3/warehouses/transfer', { key: owner, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: to, items: [{ sku: 'ISO-SKU', quantity: 1 }], reference: 'ISO-1' } });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  },
  cycle_count_id: async () => (await create(http, owner, '/v3/warehouses/cycle-count', { warehouse_id: shop.warehouseId, count_type: 'partial', skus: ['ISO-SKU'] })).id,
  payment_id: async () => (await create(http, owner, '/v3/payments/process', { amount: 1000, currency: 'usd', payment_method: cardBody('4242424242424242') })).id,
  refund_id: async (ids) => (await create(http, owner, `/v3/payments/${ids.payment_id}/refunds`, { amount: 100 })).id,
  plan_id: async () => (await newPlan(http, owner, { amount: 1500 })).id,
  clock_id: async () => newClock(http, owner, '2025-01-01T00:00:00Z'),
  subscription_id: async (ids) => (await create(http, owner, '/v3/subscriptions', {
    customer_id: ids.customer_id, plan_id: ids.plan_id, auto_collection: true, payment_method: card(), test_clock: ids.clock_id,
  })).id,
  invoice_id: async (ids) => {
    await advance(http, owner, ids.clock_id!, '2025-02-02T00:00:00Z'); // the first period closes: an invoice
    const res = await http(`/v3/invoices?subscription_id=${ids.subscription_id}`, { key: owner });
    expect(res.body.data.length, res.text).toBeGreaterThan(0);
    return res.body.data[0].id;
  },
  rule_id: async () => (await create(http, owner, '/v3/crm/tasks/automation', {
    name: 'Isolation rule', trigger: { event: 'order.created' }, actions: [{ type: 'add_segment', segment: 'iso' }],
  })).id,
  routing_rule_id: async () => (await create(http, owner, '/v3/payments/routing_rules', { name: 'Isolation routing', gateways: ['sandbox'] })).id,
  template_id: async () => (await create(http, owner, '/v3/invoice_templates', { name: 'Isolation template' })).id,
  segment_id: async () => (await create(http, owner, '/v3/segments', {
    name: 'Isolation segment', rules: { match: 'all', conditions: [{ field: 'segments', operator: 'contains', value: 'iso' }] },
  })).id,
  task_id: async (ids) => (await create(http, owner, '/v3/crm/tasks', { title: 'Isolation task', customer_id: ids.customer_id })).id,
  webhook_id: async () => (await create(http, owner, '/v3/webhooks', { url: receiver.url, events: ['customer.updated'] })).id,
  delivery_id: async (ids) => {
    const res = await http(`/v3/webhooks/${ids.webhook_id}/test`, { key: owner, body: { event_type: 'customer.updated' } });
    expect(res.status, res.text).toBe(200);
    return res.body.id;
  },
  report_id: async () => {
    const res = await http('/v3/analytics/reports/generate', { key: owner, body: { report_type: 'sales', format: 'csv', date_range: { start: '2025-01-01', end: '2025-01-31' } } });
    expect(res.status, res.text).toBe(202);
    for (let i = 0; i < 150 && (await http(`/v3/analytics/reports/${res.body.id}`, { key: owner })).body.status !== 'succeeded'; i++) await new Promise((r) => setTimeout(r, 200));
    return res.body.id;
  },
  shipping_clock_id: async () => (await create(http, owner, '/v3/shipping/test_clocks', { frozen_time: '2025-01-01T08:00:00Z' })).id,
  shipment_id: async (ids) => (await create(http, owner, '/v3/shipping/create', {
    order_id: ids.order_id, carrier: 'parcelpoint', service_level: 'ground', test_clock: ids.shipping_clock_id,
    origin: { address: '1 Dock Rd', city: 'Newark', country: 'US', postal_code: '07102' },
    destination: { address: '12 Elm St', city: 'Springfield', country: 'US', postal_code: '62701' },
    packages: [{ weight: 1, dimensions: { length: 20, width: 15, height: 10 } }],
  })).id,
  pickup_id: async (ids) => (await create(http, owner, '/v3/shipping/pickup/schedule', {
    shipment_ids: [ids.shipment_id], pickup_date: '2025-01-02', time_window: { start: '10:00', end: '12:00' }, contact: { name: 'Dock', phone: '+14155550123' },
  })).id,
  transaction_id: async () => (await create(http, owner, '/v3/financial/transactions', { type: 'revenue', amount: 10, currency: 'USD' })).id,
  project_id: async () => (await create(http, owner, '/v3/projects', { name: 'Iso', budget: 100, start_date: '2025-01-01', end_date: '2025-12-31' })).id,
  vendor_id: async () => (await create(http, owner, '/v3/vendors', { name: 'Iso vendor', email: 'iso@vendor.test' })).id,
  procurement_order_id: async (ids) => (await create(http, owner, '/v3/procurement/orders', {
    vendor_id: ids.vendor_id, approval_required: true, items: [{ description: 'Iso', quantity: 1, unit_price: 5, currency: 'USD' }],
  })).id,
  reward_id: async () => (await create(http, owner, '/v3/rewards/catalog', { name: 'Isolation reward', cost: 100 })).id,
  event_id: async (ids) => {
    const res = await http(`/v3/events?limit=100`, { key: owner });
    const event = res.body.data.find((e: { data: { object: { id: string } } }) => e.data.object.id === ids.payment_id);
    expect(event, res.text).toBeDefined();
    return event.id;
  },
  ...communicationsFactories(() => http, () => owner),
};

/** A body each write route accepts from its owner, so that only the lookup can refuse it. */
const BODIES: Record<string, unknown> = {
  'patch /v3/customers/{customer_id}': { name: 'Hijacked' },
  'post /v3/payments/{payment_id}/refunds': { amount: 100 },
  'post /v3/subscriptions/{subscription_id}/cancel': {},
  'patch /v3/subscriptions/{subscription_id}': { plan_id: '{plan_id}', prorate: false },
  'post /v3/test_clocks/{clock_id}/advance': { frozen_time: '2025-03-01T00:00:00Z' },
  'post /v3/stores/{store_id}/products': { name: 'Hijack', sku: 'ISO-HIJACK', price: 1 },
  'put /v3/inventory/{sku}/stock': { warehouse_id: '{warehouse_id}', quantity: 99, operation: 'set' },
  'patch /v3/orders/{order_id}': { metadata: { hijacked: 'yes' } },
  'patch /v3/warehouses/{warehouse_id}/inventory/{sku}': { reorder_point: 1 },
  'post /v3/warehouses/{warehouse_id}/movements': { sku: 'ISO-SKU', quantity: 1 },
  'post /v3/warehouses/transfers/{transfer_id}/receive': { items: [{ sku: 'ISO-SKU', quantity: 1 }] },
  'post /v3/warehouses/cycle-counts/{cycle_count_id}/counts': { counts: [{ sku: 'ISO-SKU', quantity: 1 }] },
  'post /v3/warehouses/transfers/{transfer_id}/test_clock/advance': { frozen_time: '2030-01-01T00:00:00Z' },
  'post /v3/warehouses/cycle-counts/{cycle_count_id}/test_clock/advance': { frozen_time: '2030-01-01T00:00:00Z' },
  'post /v3/customers/{customer_id}/interactions': { type: 'call', direction: 'inbound', notes: 'hijack' },
  'post /v3/customers/{customer_id}/touchpoints': { type: 'website_visit', source: 'hijack' },
  'patch /v3/crm/tasks/automation/{rule_id}': { enabled: false },
  'patch /v3/webhooks/{webhook_id}': { enabled: false },
  'patch /v3/segments/{segment_id}': { name: 'Hijacked' },
  'patch /v3/invoice_templates/{template_id}': { name: 'Hijacked' },
  'patch /v3/payments/routing_rules/{routing_rule_id}': { enabled: false },
  'put /v3/customers/{customer_id}/invoice_template': { template_id: null },
  'put /v3/subscriptions/{subscription_id}/invoice_template': { template_id: null },
  'post /v3/webhooks/{webhook_id}/test': { event_type: 'customer.updated' },
  'post /v3/communications/pbx/{pbx_id}/extensions': { extension: '202' },
  'patch /v3/communications/pbx/{pbx_id}/extensions/{extension_id}': { status: 'dnd' },
  'post /v3/communications/calls/{call_id}/hangup': {},
  'post /v3/shipping/test_clocks/{shipping_clock_id}/advance': { frozen_time: '2025-01-05T00:00:00Z' },
  'patch /v3/projects/{project_id}': { name: 'Hijacked' },
  'patch /v3/procurement/orders/{procurement_order_id}': { items: [{ description: 'Hijack', quantity: 1, unit_price: 1, currency: 'USD' }] },
  'post /v3/procurement/orders/{procurement_order_id}/bill': { invoice_number: 'HIJACK', amount: 1 },
  'post /v3/procurement/orders/{procurement_order_id}/test_clock/advance': { frozen_time: '2030-01-01T00:00:00Z' },
};

/**
 * The answers that are not a plain 404, each refusing before any lookup (so the same for any id):
 * a live key may not touch test clocks at all; a stock write names an unknown SKU as a field error.
 */
const EXPECTED: Record<string, string> = {
  'post /v3/test_clocks/{clock_id}/advance (other mode)': '403 test_mode_only',
  'post /v3/procurement/orders/{procurement_order_id}/test_clock/advance (other mode)': '403 test_mode_only',
  'put /v3/inventory/{sku}/stock (other account)': '422 validation_failed',
  'put /v3/inventory/{sku}/stock (other mode)': '422 validation_failed',
};

const PARAM = /\{([a-z_]+)\}/g;
const idRoutes = v3Routes
  .filter((r) => [...r.path.matchAll(PARAM)].some((m) => !(m[1]! in NOT_RESOURCE_IDS)))
  .map((r) => ({ method: r.method as string, path: r.path as string, params: [...r.path.matchAll(PARAM)].map((m) => m[1]!) }));

const fill = (template: string, ids: Ids) => template.replace(PARAM, (_, name: string) => ids[name] ?? `{${name}}`);
const fillBody = (body: unknown, ids: Ids): unknown => JSON.parse(fill(JSON.stringify(body), ids));

beforeAll(async () => {
  platform = await startTestPlatform({
    worker: true,
    env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', PAYMENTS_SYNC_WAIT_MS: '6000' },
  });
  http = client(platform.url);
  receiver = await startReceiver();
  ownerAccount = await platform.newAccount();
  owner = await platform.newKey({ accountId: ownerAccount });
});
afterAll(async () => {
  await receiver?.close();
  await platform?.close();
});

describe('cross-account and cross-mode isolation of every resource route', () => {
  it('has a factory for every id parameter of every route (a new area adds one)', () => {
    const params = new Set(idRoutes.flatMap((r) => r.params).filter((p) => !(p in NOT_RESOURCE_IDS)));
    expect([...params].filter((p) => !(p in FACTORIES))).toEqual([]);
    // The table really covers the areas it names (a wrong derivation would make the test vacuous).
    expect(idRoutes.length).toBeGreaterThan(30);
    expect(new Set(idRoutes.map((r) => r.method))).toEqual(new Set(['get', 'post', 'patch', 'put', 'delete']));
  });

  it('answers 404 not_found to another account and to the other mode, and changes nothing', async () => {
    shop = await openShop(http, owner);
    const ids: Ids = {};
    for (const [name, make] of Object.entries(FACTORIES)) ids[name] = await make(ids);

    // Every route answers its owner (so a 404 below is about the caller, not a broken fixture).
    const reads = idRoutes.filter((r) => r.method === 'get');
    const snapshot = async () => Promise.all(reads.map(async (r) => {
      const res = await http(fill(r.path, ids), { key: owner });
      expect(res.status, `${r.method} ${r.path} for its owner: ${res.text}`).toBe(200);
      // Computed per read: the journey's time, and a report's signed link (its expiry moves with the clock's hour).
      const { computed_at: _, download_url: _url, download_url_expires_at: _expires, ...state } = res.body;
      return state;
    }));
    const before = await snapshot();

    const otherAccount = await platform.newKey({ accountId: await platform.newAccount() });
    const otherMode = await platform.newKey({ accountId: ownerAccount, type: 'live' });
    const unknown: Ids = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, k === 'sku' ? 'ISO-UNKNOWN' : `${v.slice(0, -6)}zzzzzz`]));
    const call = async (r: (typeof idRoutes)[number], key: string, with_: Ids) => {
      const body = r.method === 'get' || r.method === 'delete' ? undefined : fillBody(BODIES[`${r.method} ${r.path}`] ?? {}, with_);
      const res = await http(fill(r.path, with_), { key, method: r.method.toUpperCase(), body });
      return `${res.status} ${res.status < 500 ? res.body.code : res.text.slice(0, 300)}`;
    };
    const answers: string[] = [];
    for (const r of idRoutes) {
      for (const [who, key] of [['other account', otherAccount], ['other mode', otherMode]] as const) {
        const got = await call(r, key, ids);
        const route = `${r.method} ${r.path}`;
        const expected = EXPECTED[`${route} (${who})`] ?? '404 not_found';
        // The other party's answer is the one it gets for an id that does not exist: nothing leaks.
        answers.push(`${route} (${who}) → ${got} (for an unknown id: ${await call(r, key, { ...unknown, warehouse_id: ids.warehouse_id! })})`);
        if (got !== expected) answers.push(`  expected ${expected}`);
      }
    }
    expect(answers.filter((a) => a.startsWith('  expected') || !/→ (.*) \(for an unknown id: \1\)$/.test(a))).toEqual([]);
    expect(answers).toHaveLength(idRoutes.length * 2);
    expect(await snapshot()).toEqual(before);
    // Every id route of every area, three times over: on a loaded 2-core machine this outlasts the default minute.
  }, 180_000);
});
