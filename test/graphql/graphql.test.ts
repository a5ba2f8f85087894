import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { schemaSdl } from '../../domain/graphql/schema.ts';
import { create, openShop, orderBody, stockedProduct, type Shop } from '../commerce/support.ts';
import { usePlatform } from '../support/use-platform.ts';

const t = usePlatform({ worker: true, ownAccount: true });
let shop: Shop;

const gql = (query: string, variables?: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  t.http('/v3/graphql', { key: opts.key ?? t.key, body: { query, variables }, headers: opts.headers });

/** The nested query the N+1 test runs: customers, each with their loyalty balance, subscriptions, open invoices, payments and last orders with their shipments. */
const NESTED = `query Nested($n: Int) {
  customers(first: $n) { edges { node { id name
    loyalty { points_balance available_rewards }
    subscriptions(first: 3) { edges { node { id status } } }
    invoices(first: 3, status: [open]) { edges { node { id amount_due } } }
    payments(first: 3) { edges { node { id amount } } }
    orders(first: 3) { pageInfo { hasNextPage } edges { node { id customer_id total_amount
      customer { id }
      shipments(first: 2) { edges { node { id status } } } } } } } } } }`;

/** Counts the reads of records of the tables the nested query reads, while `fn` runs (every client of the ORM's pool). */
async function countingQueries<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  // The class of the ORM pool's clients (taken from one of them: the test's `pg` import may be another copy).
  const pool = await t.platform.orm.em.getConnection().getNativeClient();
  const sample = await pool.connect();
  const proto = Object.getPrototypeOf(sample) as typeof pg.Client.prototype;
  sample.release();
  const original = proto.query;
  const tables = /\b(customers|subscriptions|invoices|orders|shipments|payments|payment_transfers)\b/;
  proto.query = function patched(this: pg.Client, ...args: unknown[]) {
    const config = args[0];
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text ?? '';
    // Entity reads and the per-parent reads only: the in-process worker's event consumers (CRM
    // metrics) run their own aggregate statements on these tables meanwhile.
    if ((/^select "c0"\.\* from /.test(text) || text.includes('bp_rank')) && tables.test(text)) statements.push(text);
    // The loyalty balances' batch reads (the program's own read is shared with the loyalty consumers).
    else if (/\bloyalty_(accounts|grants|rewards)\b/.test(text) && /any\(\$\d::text\[\]\)|cost <= \$3/.test(text)) statements.push(text);
    // Products, and the stock levels of many SKUs (Product.stock).
    else if (/^select "p0"\.\* from "products"/.test(text) || /from inventory_levels where account_id = .* and sku in \(/.test(text)) statements.push(text);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  try {
    return { result: await fn(), statements };
  } finally {
    proto.query = original;
  }
}

async function customerWithOrders(orders: number): Promise<string> {
  const c = await create(t.http, t.key, '/v3/customers', { email: `c-${Math.random().toString(36).slice(2)}@example.com`, name: 'Nested' });
  for (let i = 0; i < orders; i++) {
    await create(t.http, t.key, '/v3/orders', orderBody({ ...shop, customerId: c.id }, [{ sku: 'MUG-1', quantity: 1 }]));
  }
  return c.id;
}

beforeAll(async () => {
  shop = await openShop(t.http, t.key);
  await stockedProduct(t.http, t.key, shop, 'MUG-1', 100);
});

describe('the schema', () => {
  it('is published as SDL and equals the checked-in api/v3/graphql/schema.graphql', async () => {
    const checkedIn = readFileSync(new URL('../../api/v3/graphql/schema.graphql', import.meta.url), 'utf8');
    // Regenerate with: scripts/node24.sh node domain/graphql/print-sdl.ts
    expect(schemaSdl, 'the schema changed without api/v3/graphql/schema.graphql').toBe(checkedIn);
    const res = await t.http('/v3/graphql/schema.graphql', { key: t.key, headers: { accept: 'text/plain' } });
    expect(res.status).toBe(200);
    expect(res.text).toBe(checkedIn);
  });
});

describe('nested queries', () => {
  it('gives a customer with their last orders and each order with its customer, in one request', async () => {
    const id = await customerWithOrders(2);
    const res = await gql(`query($id: String!) { customer(id: $id) { id name orders(first: 1) { pageInfo { hasNextPage } edges { node { id customer_id customer { id } shipments { edges { node { id } } } } } } } }`, { id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const customer = res.body.data.customer;
    expect(customer.id).toBe(id);
    expect(customer.orders.edges).toHaveLength(1);
    expect(customer.orders.pageInfo.hasNextPage).toBe(true);
    expect(customer.orders.edges[0].node).toMatchObject({ customer_id: id, customer: { id }, shipments: { edges: [] } });
  });

  it('runs a bounded number of SQL statements whatever the number of customers (no N+1)', async () => {
    // The newest customer of each run has loyalty points, so every read of the balances runs.
    const award = async (customerId: string) => {
      const res = await t.http('/v3/rewards/points/award', { key: t.key, body: { customer_id: customerId, points: 100, reason: 'n+1' } });
      expect(res.status, res.text).toBe(201);
    };
    for (let i = 0; i < 2; i++) await customerWithOrders(2);
    await award(await customerWithOrders(2));
    const small = await countingQueries(() => gql(NESTED, { n: 2 }));
    expect(small.result.status, small.result.text).toBe(200);
    expect(small.result.body.data.customers.edges).toHaveLength(2);
    for (let i = 0; i < 3; i++) await customerWithOrders(2);
    await award(await customerWithOrders(2));
    const large = await countingQueries(() => gql(NESTED, { n: 6 }));
    expect(large.result.body.errors).toBeUndefined();
    const nodes = large.result.body.data.customers.edges.map((e: any) => e.node);
    expect(nodes).toHaveLength(6);
    expect(nodes.every((n: any) => n.orders.edges.length === 2)).toBe(true);
    expect(nodes[0].loyalty.points_balance).toBe(100);
    // customers, subscriptions, invoices, payments, orders, the orders' customers, shipments: one statement each;
    // loyalty balances: accounts, points earned, next expiries, affordable rewards.
    expect(large.statements.length).toBeGreaterThanOrEqual(9);
    expect(large.statements.length, large.statements.map((q) => q.slice(0, 120)).join("\n")).toBeLessThanOrEqual(11);
    expect(large.statements.length).toBe(small.statements.length);
  });

  it('reads the stock of many products in one statement (Product.stock)', async () => {
    for (let i = 0; i < 5; i++) await stockedProduct(t.http, t.key, shop, `N1-${i}-${Math.random().toString(36).slice(2, 6)}`, i + 1);
    const query = 'query($n: Int) { products(first: $n) { edges { node { id sku stock { warehouse_id available } } } } }';
    const small = await countingQueries(() => gql(query, { n: 2 }));
    const large = await countingQueries(() => gql(query, { n: 6 }));
    expect(large.result.body.errors).toBeUndefined();
    const nodes = large.result.body.data.products.edges.map((e: any) => e.node);
    expect(nodes).toHaveLength(6);
    expect(nodes.every((n: any) => n.stock.length === 1 && n.stock[0].warehouse_id === shop.warehouseId)).toBe(true);
    // products, then the levels of all their SKUs.
    expect(large.statements, large.statements.map((q) => q.slice(0, 120)).join('\n')).toHaveLength(2);
    expect(small.statements).toHaveLength(2);
  });

  it('pages a root list with first and after', async () => {
    const first = await gql('{ customers(first: 1) { pageInfo { hasNextPage endCursor } edges { node { id } } } }');
    const { endCursor } = first.body.data.customers.pageInfo;
    const second = await gql('query($after: String) { customers(first: 1, after: $after) { edges { node { id } } } }', { after: endCursor });
    expect(second.body.data.customers.edges[0].node.id).not.toBe(first.body.data.customers.edges[0].node.id);
    const bad = await gql('{ customers(first: 1, after: "nope") { edges { node { id } } } }');
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'validation_failed', errors: [{ path: 'after' }] });
    const tooMany = await gql('{ customers(first: 1000) { edges { node { id } } } }');
    expect(tooMany.body.errors[0].extensions).toMatchObject({ code: 'validation_failed', errors: [{ path: 'first', message: 'must be between 1 and 100' }] });
  });
});

describe('isolation and permissions', () => {
  it('never shows another account\'s or the other mode\'s records', async () => {
    const id = await customerWithOrders(0);
    const otherAccount = await t.platform.newAccount();
    const other = await t.platform.newKey({ accountId: otherAccount, type: 'test' });
    const live = await t.platform.newKey({ accountId: t.accountId, type: 'live' });
    for (const key of [other, live]) {
      const res = await gql('query($id: String!) { customer(id: $id) { id } customers { edges { node { id } } } }', { id }, { key });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.customer).toBeNull();
      expect(res.body.data.customers.edges.map((e: any) => e.node.id)).not.toContain(id);
    }
  });

  it('answers a field the key may not read with an error naming the permission, not data', async () => {
    const id = await customerWithOrders(1);
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'crm:read'] });
    const res = await gql('query($id: String!) { customer(id: $id) { id orders { edges { node { id total_amount } } } } }', { id }, { key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.customer).toEqual({ id, orders: null });
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({ path: ['customer', 'orders'], extensions: { code: 'permission_denied', required_permission: 'commerce:read' } });
    expect(res.body.errors[0].message).toContain('commerce:read');

    const noGraphql = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['crm:read'] });
    const refused = await gql('{ customers { edges { node { id } } } }', undefined, { key: noGraphql });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'permission_denied', required_permission: 'graphql:read' });
  });

  it('refuses a request without a key as REST does', async () => {
    const res = await t.http('/v3/graphql', { body: { query: '{ customers { edges { node { id } } } }' } });
    expect(res.status).toBe(401);
  });
});

describe('limits', () => {
  it('refuses a document deeper than the depth limit before running it', async () => {
    const res = await gql('{ customers { edges { node { orders { edges { node { customer { orders { edges { node { shipments { edges { node { id } } } } } } } } } } } } } }');
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ code: 'query_too_deep', graphql_errors: [{ message: expect.stringMatching(/depth limit of 10/) }] });
    expect(res.body.data).toBeUndefined();
  });

  it('refuses a document above the cost limit', async () => {
    const res = await gql('{ customers(first: 100) { edges { node { id orders(first: 20) { edges { node { id shipments(first: 20) { edges { node { id status } } } } } } } } } }');
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('query_too_costly');
    expect(res.body.detail).toMatch(/Cost limit of 30000 exceeded/);
  });

  it('turns introspection off for live keys (on for test keys)', async () => {
    const query = '{ __schema { queryType { name } } }';
    expect((await gql(query)).body.data.__schema.queryType.name).toBe('Query');
    const live = await t.platform.newKey({ accountId: t.accountId, type: 'live' });
    const res = await gql(query, undefined, { key: live });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('graphql_validation_failed');
    expect(res.body.detail).toMatch(/introspection has been disabled/);
  });
});

describe('mutations', () => {
  const CREATE = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id email name } }';

  it('validates the input with the REST schema and names the bad field', async () => {
    const res = await gql(CREATE, { input: { email: 'not-an-email', segments: [''] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'validation_failed', status: 422 });
    const paths = res.body.errors[0].extensions.errors.map((e: any) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['input.email', 'input.segments.0']));
    // A field the input type does not have is refused by GraphQL before anything runs, naming it.
    const unknown = await gql(CREATE, { input: { name: 'X', color: 'red' } });
    expect(unknown.status, unknown.text).toBe(400);
    expect(unknown.body.detail).toContain('"color"');
  });

  it('creates once when retried with the same Idempotency-Key, and refuses the key on a different request', async () => {
    const key = `gql-${Math.random().toString(36).slice(2)}`;
    const body = { input: { email: `idem-${key}@example.com`, name: 'Idem' } };
    const first = await gql(CREATE, body, { headers: { 'Idempotency-Key': key } });
    expect(first.status, first.text).toBe(200);
    const again = await gql(CREATE, body, { headers: { 'Idempotency-Key': key } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.createCustomer.id).toBe(first.body.data.createCustomer.id);
    const list = await t.http(`/v3/customers?email=idem-${key}@example.com`, { key: t.key });
    expect(list.body.data).toHaveLength(1);
    const reused = await gql(CREATE, { input: { email: `other-${key}@example.com` } }, { headers: { 'Idempotency-Key': key } });
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('idempotency_key_reused');
  });

  it('takes one mutation per request with an Idempotency-Key', async () => {
    const res = await gql('mutation { a: createCustomer(input: {name: "A"}) { id } b: createCustomer(input: {name: "B"}) { id } }', undefined,
      { headers: { 'Idempotency-Key': `two-${Math.random()}` } });
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('idempotency_key_needs_one_mutation');
  });

  it('needs the write permission of the area for a mutation', async () => {
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'crm:read'] });
    const res = await gql(CREATE, { input: { name: 'Nope' } }, { key });
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'permission_denied', required_permission: 'crm:write' });
  });
});

describe('other areas', () => {
  it('lists projects with their customer, and calls, under their own permissions', async () => {
    const id = await customerWithOrders(0);
    const project = await create(t.http, t.key, '/v3/projects', { name: 'Fit-out', budget: 1000, start_date: '2026-01-01', end_date: '2026-02-01', customer_id: id });
    const res = await gql('query($id: String) { projects(customer_id: $id) { edges { node { id name status customer { id } } } } calls(first: 1) { edges { node { id } } } }', { id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.projects.edges).toEqual([{ node: { id: project.id, name: 'Fit-out', status: project.status, customer: { id } } }]);
    expect(res.body.data.calls.edges).toEqual([]);
    const key = await t.platform.newKey({ accountId: t.accountId, type: 'restricted', mode: 'test', permissions: ['graphql:read', 'erp:read'] });
    const limited = await gql('query($id: String) { projects(customer_id: $id) { edges { node { id customer { id } } } } calls { edges { node { id } } } }', { id }, { key });
    expect(limited.body.data.projects.edges).toEqual([{ node: { id: project.id, customer: null } }]);
    expect(limited.body.data.calls).toBeNull();
    expect(limited.body.errors.map((e: any) => e.extensions.required_permission).sort()).toEqual(['communications:read', 'crm:read']);
  });
});

describe('bad documents', () => {
  it('answers hostile input (NUL bytes, huge integers, deep nesting) with a 4xx or a field error, never a 5xx', async () => {
    const CREATE = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id email name } }';
    const nul = await gql(CREATE, { input: { email: 'nul@example.com', name: 'a\u0000b' } });
    expect(nul.status, nul.text).toBeLessThan(500);
    expect(JSON.stringify(nul.body)).not.toContain('"id":"cus_');
    const huge = await gql('{ customers(first: 99999999999999999999) { edges { node { id } } } }');
    expect(huge.status, huge.text).toBe(400);
    expect(['graphql_validation_failed', 'query_too_costly']).toContain(huge.body.code);
    const hugeVariable = await gql('query($n: Int) { customers(first: $n) { edges { node { id } } } }', { n: 1e20 });
    expect(hugeVariable.status, hugeVariable.text).toBeGreaterThanOrEqual(400);
    expect(hugeVariable.status, hugeVariable.text).toBeLessThan(500);
    const deep = await gql(CREATE, { input: { email: 'deep@example.com', metadata: JSON.parse(`${'{"a":'.repeat(200)}1${'}'.repeat(200)}`) } });
    expect(deep.status, deep.text).toBeLessThan(500);
    expect(JSON.stringify(deep.body)).not.toContain('"id":"cus_');
  });

  it('answers a syntax error with a 400 problem naming where it is', async () => {
    const res = await gql('{ customers { ');
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ code: 'graphql_parse_failed', graphql_errors: [{ locations: [{ line: 1 }] }] });
  });
});

describe('GET', () => {
  it('runs a query given in the URL, and refuses a mutation there', async () => {
    const ok = await t.http(`/v3/graphql?query=${encodeURIComponent('{ customers(first: 1) { edges { node { id } } } }')}`, { key: t.key });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.customers.edges).toHaveLength(1);
    const mutation = await t.http(`/v3/graphql?query=${encodeURIComponent('mutation { createCustomer(input: {name: "x"}) { id } }')}`, { key: t.key });
    expect(mutation.status).toBe(422);
  });
});
