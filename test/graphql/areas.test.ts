import { beforeAll, describe, expect, it } from 'vitest';
import { create, openShop, stockedProduct, type Shop } from '../commerce/support.ts';
import { usePlatform } from '../support/use-platform.ts';

/** Products, stock levels and loyalty balances over GraphQL (docs/graphql.md). */
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
