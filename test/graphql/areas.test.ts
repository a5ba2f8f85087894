import { beforeAll, describe, expect, it } from 'vitest';
import { card, newPlan } from '../billing/support.ts';
import { create, openShop, orderBody, stockedProduct, stockOf, type Shop } from '../commerce/support.ts';
import { realtimeHubOf } from '../../domain/warehouses/realtime.ts';
import { usePlatform } from '../support/use-platform.ts';

/** Products, stock levels, loyalty balances, the order and subscription mutations, and the inventory subscription over GraphQL (docs/graphql.md). */
const t = usePlatform({ worker: true, ownAccount: true });
let shop: Shop;

const gql = (query: string, variables?: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  t.http('/v3/graphql', { key: opts.key ?? t.key, body: { query, variables }, headers: opts.headers });

const sku = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  shop = await openShop(t.http, t.key);
});

describe('products and stock', () => {
  it('gives a product with its stock in every warehouse, as REST does', async () => {
    const code = sku('GQL');
    const product = await stockedProduct(t.http, t.key, shop, code, 7, { categories: ['mugs'], price: 1250 });
    const rest = await t.http(`/v3/products/${product.id}`, { key: t.key });
    const res = await gql(`query($id: String!, $sku: String!) {
      product(id: $id) { id object name sku price currency categories inventory variants created_at stock { warehouse_id sku quantity reserved available } }
      stock(sku: $sku) { warehouse_id available }
      products(sku: [$sku]) { edges { node { id } } } }`, { id: product.id, sku: code });
    expect(res.status, res.text).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const { stock, ...fields } = res.body.data.product;
    expect(fields).toEqual({
      id: rest.body.id, object: 'product', name: rest.body.name, sku: code, price: 1250, currency: 'USD', categories: ['mugs'],
      inventory: rest.body.inventory, variants: [], created_at: rest.body.created_at,
    });
    expect(stock).toEqual([{ warehouse_id: shop.warehouseId, sku: code, quantity: 7, reserved: 0, available: 7 }]);
    expect(res.body.data.stock).toEqual([{ warehouse_id: shop.warehouseId, available: 7 }]);
    expect(res.body.data.products.edges).toEqual([{ node: { id: product.id } }]);
  });

  it('answers an unknown SKU as REST (not_found), and another account\'s product as null', async () => {
    const code = sku('MINE');
    const product = await stockedProduct(t.http, t.key, shop, code, 3);
    const missing = await gql('{ stock(sku: "NO-SUCH-SKU") { available } }');
    expect(missing.body.data).toEqual({ stock: null });
    expect(missing.body.errors[0].extensions).toMatchObject({ code: 'not_found', status: 404 });
    const other = await t.platform.newKey({ accountId: await t.platform.newAccount(), type: 'test' });
    const res = await gql('query($id: String!, $sku: String!) { product(id: $id) { id } products(sku: [$sku]) { edges { node { id } } } }', { id: product.id, sku: code }, { key: other });
    expect(res.body).toEqual({ data: { product: null, products: { edges: [] } } });
  });

  it('needs commerce:read for products and their stock', async () => {
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'crm:read'] });
    const res = await gql('{ products { edges { node { id } } } }', undefined, { key });
    expect(res.body.data.products).toBeNull();
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'permission_denied', required_permission: 'commerce:read' });
  });
});

describe('loyalty balances', () => {
  it('gives a customer with their loyalty balance, equal to the REST balance', async () => {
    const customer = await create(t.http, t.key, '/v3/customers', { email: `loyal-${Math.random().toString(36).slice(2)}@example.com`, name: 'Loyal' });
    const award = await t.http('/v3/rewards/points/award', { key: t.key, body: { customer_id: customer.id, points: 250, reason: 'welcome bonus' } });
    expect(award.status, award.text).toBe(201);
    const rest = await t.http(`/v3/rewards/customers/${customer.id}/balance`, { key: t.key });
    expect(rest.status, rest.text).toBe(200);
    const res = await gql(`query($id: String!) {
      customer(id: $id) { id loyalty { customer_id points_balance pending_points tier available_rewards next_expiry } }
      loyaltyBalance(customer_id: $id) { points_balance lifetime_points points_earned_12m } }`, { id: customer.id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.customer.loyalty).toEqual({
      customer_id: customer.id, points_balance: rest.body.points_balance, pending_points: rest.body.pending_points,
      tier: rest.body.tier, available_rewards: rest.body.available_rewards, next_expiry: rest.body.next_expiry,
    });
    expect(rest.body.points_balance).toBe(250);
    expect(res.body.data.loyaltyBalance).toEqual({
      points_balance: 250, lifetime_points: rest.body.lifetime_points, points_earned_12m: rest.body.points_earned_12m,
    });
  });

  it('is null for another account\'s customer, and needs rewards:read', async () => {
    const customer = await create(t.http, t.key, '/v3/customers', { name: 'Other' });
    const other = await t.platform.newKey({ accountId: await t.platform.newAccount(), type: 'test' });
    const foreign = await gql('query($id: String!) { loyaltyBalance(customer_id: $id) { points_balance } }', { id: customer.id }, { key: other });
    expect(foreign.body).toEqual({ data: { loyaltyBalance: null } });
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'crm:read'] });
    const res = await gql('query($id: String!) { customer(id: $id) { id loyalty { points_balance } } }', { id: customer.id }, { key });
    expect(res.body.data.customer).toEqual({ id: customer.id, loyalty: null });
    expect(res.body.errors[0]).toMatchObject({ path: ['customer', 'loyalty'], extensions: { required_permission: 'rewards:read' } });
  });
});

describe('createOrder', () => {
  const CREATE_ORDER = 'mutation($input: CreateOrderInput!) { createOrder(input: $input) { id status customer_id total_amount line_items workflow_id } }';

  it('places an order as POST /v3/orders does, and a retry with the same Idempotency-Key answers the same order without a second one', async () => {
    const code = sku('ORD');
    await stockedProduct(t.http, t.key, shop, code, 10, { price: 500 });
    const customer = await create(t.http, t.key, '/v3/customers', { name: 'Orderer' });
    const input = orderBody({ ...shop, customerId: customer.id }, [{ sku: code, quantity: 3 }]);
    const idem = `gql-order-${Math.random().toString(36).slice(2)}`;
    const first = await gql(CREATE_ORDER, { input }, { headers: { 'Idempotency-Key': idem } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.errors).toBeUndefined();
    const order = first.body.data.createOrder;
    expect(order).toMatchObject({ status: 'processing', customer_id: customer.id, total_amount: 1500 });
    const rest = await t.http(`/v3/orders/${order.id}`, { key: t.key });
    expect(rest.body).toMatchObject({ id: order.id, line_items: order.line_items, workflow_id: order.workflow_id });
    const again = await gql(CREATE_ORDER, { input }, { headers: { 'Idempotency-Key': idem } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.createOrder.id).toBe(order.id);
    const list = await t.http(`/v3/orders?customer_id=${customer.id}`, { key: t.key });
    expect(list.body.data.map((o: any) => o.id)).toEqual([order.id]);
    expect(await stockOf(t.platform, t.key, code)).toEqual({ quantity: 10, reserved: 3 });
  });

  it('validates with the REST schema (errors name input.<field>) and refuses hostile input without creating anything', async () => {
    const code = sku('BAD');
    await stockedProduct(t.http, t.key, shop, code, 5);
    const customer = await create(t.http, t.key, '/v3/customers', { name: 'Hostile' });
    const good = orderBody({ ...shop, customerId: customer.id }, [{ sku: code, quantity: 1 }]);
    const ordersOf = async () => (await t.http(`/v3/orders?customer_id=${customer.id}`, { key: t.key })).body.data.length;

    const invalid = await gql(CREATE_ORDER, { input: { ...good, currency: 'XX', line_items: [{ sku: 'bad sku!', quantity: 0 }], store_id: undefined } });
    expect(invalid.status, invalid.text).toBe(200);
    expect(invalid.body.errors[0].extensions).toMatchObject({ code: 'validation_failed', status: 422 });
    expect(invalid.body.errors[0].extensions.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining([
      'input.store_id', 'input.currency', 'input.line_items.0.sku', 'input.line_items.0.quantity',
    ]));

    // NUL bytes: refused by the pipeline before GraphQL, naming where.
    const nul = await gql(CREATE_ORDER, { input: { ...good, metadata: { note: 'a\u0000b' } } });
    expect(nul.status, nul.text).toBe(422);
    expect(JSON.stringify(nul.body)).toContain('metadata.note');

    // Huge integers: a variable beyond Int, and a literal one.
    const huge = await gql(CREATE_ORDER, { input: { ...good, line_items: [{ sku: code, quantity: 1e20 }] } });
    expect(huge.status, huge.text).toBe(400);
    expect(huge.body.detail).toMatch(/quantity/);
    const hugeLiteral = await gql(`mutation { createOrder(input: { store_id: "${shop.storeId}", line_items: [{ sku: "${code}", quantity: 99999999999999999999 }] }) { id } }`);
    expect(hugeLiteral.status, hugeLiteral.text).toBe(400);
    const tooMany = await gql(CREATE_ORDER, { input: { ...good, line_items: [{ sku: code, quantity: 2_000_000 }] } });
    expect(tooMany.body.errors[0].extensions.errors).toEqual([expect.objectContaining({ path: 'input.line_items.0.quantity' })]);

    // Deep nesting in a JSON field.
    const deep = await gql(CREATE_ORDER, { input: { ...good, metadata: JSON.parse(`${'{"a":'.repeat(200)}"x"${'}'.repeat(200)}`) } });
    expect(deep.status, deep.text).toBeLessThan(500);
    expect(JSON.stringify(deep.body)).not.toContain('"id":"ord_');

    // Another account's store and customer: not found, as REST.
    const otherKey = await t.platform.newKey({ accountId: await t.platform.newAccount(), type: 'test' });
    const otherShop = await openShop(t.http, otherKey);
    const foreignBody = orderBody({ ...shop, storeId: otherShop.storeId, customerId: otherShop.customerId }, [{ sku: code, quantity: 1 }]);
    const foreign = await gql(CREATE_ORDER, { input: foreignBody });
    expect(foreign.status, foreign.text).toBe(200);
    expect(foreign.body.data).toBeNull();
    const restForeign = await t.http('/v3/orders', { key: t.key, body: foreignBody });
    expect(restForeign.status).toBeGreaterThanOrEqual(400);
    expect(foreign.body.errors[0].extensions).toMatchObject({ code: restForeign.body.code, status: restForeign.status });
    expect(JSON.stringify(foreign.body.errors[0].extensions)).toContain('store_id');

    expect(await ordersOf()).toBe(0);
    expect(await stockOf(t.platform, t.key, code)).toEqual({ quantity: 5, reserved: 0 });
  });

  it('needs commerce:write', async () => {
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'commerce:read'] });
    const res = await gql(CREATE_ORDER, { input: orderBody(shop, [{ sku: 'X', quantity: 1 }]) }, { key });
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'permission_denied', required_permission: 'commerce:write' });
  });
});

describe('createSubscription and cancelSubscription', () => {
  const CREATE_SUB = 'mutation($input: CreateSubscriptionInput!) { createSubscription(input: $input) { id status customer_id plan_id cancel_at_period_end } }';

  it('creates a subscription as POST /v3/subscriptions does (once per Idempotency-Key), and cancels it', async () => {
    const plan = await newPlan(t.http, t.key, { amount: 2000 });
    const customer = await create(t.http, t.key, '/v3/customers', { name: 'Subscriber' });
    const input = { customer_id: customer.id, plan_id: plan.id, auto_collection: true, payment_method: card() };
    const idem = `gql-sub-${Math.random().toString(36).slice(2)}`;
    const first = await gql(CREATE_SUB, { input }, { headers: { 'Idempotency-Key': idem } });
    expect(first.status, first.text).toBe(200);
    expect(first.body.errors).toBeUndefined();
    const sub = first.body.data.createSubscription;
    expect(sub).toMatchObject({ status: 'active', customer_id: customer.id, plan_id: plan.id });
    const again = await gql(CREATE_SUB, { input }, { headers: { 'Idempotency-Key': idem } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.createSubscription.id).toBe(sub.id);
    const list = await t.http(`/v3/subscriptions?customer_id=${customer.id}`, { key: t.key });
    expect(list.body.data.map((s: any) => s.id)).toEqual([sub.id]);

    const CANCEL = 'mutation($id: String!) { cancelSubscription(id: $id, input: { at_period_end: true }) { id status cancel_at_period_end } }';
    const cancelKey = { 'Idempotency-Key': `${idem}-cancel` };
    const cancel = await gql(CANCEL, { id: sub.id }, { headers: cancelKey });
    expect(cancel.body.errors).toBeUndefined();
    expect(cancel.body.data.cancelSubscription).toMatchObject({ id: sub.id, cancel_at_period_end: true });
    const cancelAgain = await gql(CANCEL, { id: sub.id }, { headers: cancelKey });
    expect(cancelAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(cancelAgain.body).toEqual(cancel.body);
    const rest = await t.http(`/v3/subscriptions/${sub.id}`, { key: t.key });
    expect(rest.body.cancel_at_period_end).toBe(true);
  });

  it('validates with the REST schema and refuses other accounts\' records', async () => {
    const bad = await gql(CREATE_SUB, { input: { customer_id: 'cus_x', trial_period_days: 10_000, payment_method: { type: 'card', card: { number: '4242', exp_month: 13, exp_year: 2020, cvc: '1' } } } });
    expect(bad.body.errors[0].extensions.code).toBe('validation_failed');
    expect(bad.body.errors[0].extensions.errors.map((e: any) => e.path)).toEqual(expect.arrayContaining(['input.plan_id', 'input.trial_period_days']));
    expect(bad.body.errors[0].extensions.errors.some((e: any) => e.path.startsWith('input.payment_method.card.'))).toBe(true);

    const otherKey = await t.platform.newKey({ accountId: await t.platform.newAccount(), type: 'test' });
    const otherPlan = await newPlan(t.http, otherKey, { amount: 100 });
    const customer = await create(t.http, t.key, '/v3/customers', { name: 'Mine' });
    const plan = await newPlan(t.http, t.key, { amount: 100 });
    const good = { customer_id: customer.id, plan_id: plan.id, auto_collection: false };
    const nul = await gql(CREATE_SUB, { input: { ...good, metadata: { k: 'a\u0000b' } } });
    expect(nul.status, nul.text).toBe(422);
    const huge = await gql(CREATE_SUB, { input: { ...good, trial_period_days: 2 ** 53 } });
    expect(huge.status, huge.text).toBe(400);
    const hugeCard = await gql(CREATE_SUB, { input: { ...good, payment_method: { type: 'card', card: { number: '4242424242424242', exp_month: 1e300, exp_year: 2030, cvc: '123' } } } });
    expect(hugeCard.status, hugeCard.text).toBeGreaterThanOrEqual(400);
    expect(hugeCard.status, hugeCard.text).toBeLessThan(500);
    const deep = await gql(CREATE_SUB, { input: { ...good, metadata: JSON.parse(`${'{"a":'.repeat(200)}"x"${'}'.repeat(200)}`) } });
    expect(deep.status, deep.text).toBeLessThan(500);
    expect(JSON.stringify(deep.body)).not.toContain('"id":"sub_');
    const foreignBody = { customer_id: customer.id, plan_id: otherPlan.id, auto_collection: false };
    const foreign = await gql(CREATE_SUB, { input: foreignBody });
    expect(foreign.body.data).toBeNull();
    const restForeign = await t.http('/v3/subscriptions', { key: t.key, body: foreignBody });
    expect(restForeign.status).toBeGreaterThanOrEqual(400);
    expect(foreign.body.errors[0].extensions).toMatchObject({ code: restForeign.body.code, status: restForeign.status });
    expect(JSON.stringify(foreign.body.errors[0].extensions)).toContain('plan_id');
    expect((await t.http(`/v3/subscriptions?customer_id=${customer.id}`, { key: t.key })).body.data).toEqual([]);

    const otherCustomer = await create(t.http, otherKey, '/v3/customers', { name: 'Theirs' });
    const theirs = await t.http('/v3/subscriptions', { key: otherKey, body: { customer_id: otherCustomer.id, plan_id: otherPlan.id, auto_collection: false } });
    expect(theirs.status, theirs.text).toBe(201);
    const cancel = await gql('mutation($id: String!) { cancelSubscription(id: $id) { id } }', { id: theirs.body.id });
    expect(cancel.body.errors[0].extensions.status).toBe(404);
    expect((await t.http(`/v3/subscriptions/${theirs.body.id}`, { key: otherKey })).body.status).toBe(theirs.body.status);
  });
});

/** A GraphQL request over server-sent events: the events' results as they arrive. */
async function subscribe(query: string, variables: Record<string, unknown>, key = t.key) {
  const controller = new AbortController();
  const res = await fetch(`${t.platform.url}/v3/graphql`, {
    method: 'POST', signal: controller.signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query, variables }),
  });
  const results: any[] = [];
  let buffer = '';
  let ended = false;
  const waiting: (() => void)[] = [];
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (/^event: next$/m.test(event) && data) results.push(JSON.parse(data));
        }
        waiting.splice(0).forEach((w) => w());
      }
    } catch {
      // aborted
    }
    ended = true;
    waiting.splice(0).forEach((w) => w());
  })();
  /** Waits until `n` results arrived (or the stream ended). */
  const next = async (n: number) => {
    while (results.length < n && !ended) await new Promise<void>((r) => waiting.push(r));
    return results.slice(0, n);
  };
  return { res, results, next, close: () => controller.abort(), ended: () => ended };
}

describe('inventoryChanged (subscription over server-sent events)', () => {
  const SUB = 'subscription($skus: [String!]) { inventoryChanged(skus: $skus) { seq warehouse_id sku quantity reserved available change reason } }';
  const setStock = (key: string, warehouseId: string, code: string, quantity: number) =>
    t.http(`/v3/inventory/${code}/stock`, { key, method: 'PUT', body: { warehouse_id: warehouseId, quantity, operation: 'set' } });

  it('sends a stock change made through REST, and never another account\'s change', async () => {
    const code = sku('LIVE');
    await stockedProduct(t.http, t.key, shop, code, 2);
    const otherKey = await t.platform.newKey({ accountId: await t.platform.newAccount(), type: 'test' });
    const otherShop = await openShop(t.http, otherKey);
    await stockedProduct(t.http, otherKey, otherShop, code, 1);

    const sub = await subscribe(SUB, { skus: [code] });
    expect(sub.res.status).toBe(200);
    expect(sub.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect((await setStock(t.key, shop.warehouseId, code, 9)).status).toBe(200);
    expect((await setStock(otherKey, otherShop.warehouseId, code, 50)).status).toBe(200);
    // A second change of our own after the other account's: when it arrives, the other's would have (commit order).
    expect((await setStock(t.key, shop.warehouseId, code, 4)).status).toBe(200);
    const [first, second] = await sub.next(2);
    expect(first.data.inventoryChanged).toMatchObject({
      warehouse_id: shop.warehouseId, sku: code, quantity: 9, reserved: 0, available: 9, change: { quantity: 7, reserved: 0, in_transit: 0 }, reason: 'stock_update',
    });
    expect(second.data.inventoryChanged).toMatchObject({ warehouse_id: shop.warehouseId, quantity: 4, change: { quantity: -5 } });
    expect(second.data.inventoryChanged.seq).toBeGreaterThan(first.data.inventoryChanged.seq);
    expect(sub.results).toHaveLength(2);

    // The client going away ends the subscription on the server.
    const hub = realtimeHubOf(t.platform.api.deps)!;
    expect(hub.subscribers).toBeGreaterThanOrEqual(1);
    const before = hub.subscribers;
    sub.close();
    for (let i = 0; i < 100 && hub.subscribers >= before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(hub.subscribers).toBe(before - 1);
  });

  it('stores a mutation answered over server-sent events for a retry with the same Idempotency-Key', async () => {
    const idem = `gql-sse-${Math.random().toString(36).slice(2)}`;
    const send = () => fetch(`${t.platform.url}/v3/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', accept: 'text/event-stream', 'idempotency-key': idem },
      body: JSON.stringify({ query: 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }', variables: { input: { name: 'Streamed', email: `${idem}@example.com` } } }),
    });
    const first = await send();
    const firstText = await first.text();
    expect(first.status, firstText).toBe(200);
    expect(firstText).toMatch(/event: next\ndata: \{"data":\{"createCustomer":\{"id":"cus_/);
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    expect((await t.http(`/v3/customers?email=${idem}@example.com`, { key: t.key })).body.data).toHaveLength(1);
  });

  it('needs warehouses:read, and refuses a bad document or filter before streaming', async () => {
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'commerce:read'] });
    const denied = await subscribe(SUB, { skus: ['X'] }, key);
    const [result] = await denied.next(1);
    expect(result.errors[0].extensions).toMatchObject({ code: 'permission_denied', required_permission: 'warehouses:read' });
    expect(result.data ?? null).toBeNull();

    const bad = await fetch(`${t.platform.url}/v3/graphql`, {
      method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { inventoryChanged(nope: 1) { seq } }' }),
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe('graphql_validation_failed');

    const tooLong = await subscribe(SUB, { skus: ['x'.repeat(65)] });
    const [refused] = await tooLong.next(1);
    expect(refused.errors[0].extensions).toMatchObject({ code: 'validation_failed', errors: [{ path: 'skus.0' }] });
  });

  // Last: it closes this API's realtime hub.
  it('ends the stream (complete) when the server shuts down', async () => {
    const sub = await subscribe(SUB, { skus: ['ANY'] });
    expect(sub.res.status).toBe(200);
    await realtimeHubOf(t.platform.api.deps)!.close();
    await sub.next(1);
    expect(sub.ended()).toBe(true);
    expect(sub.results).toEqual([]);
  });
});
