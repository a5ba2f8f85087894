import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { nativePool } from '../../db/pool.ts';
import { create, openShop, orderBody, stockedProduct } from '../commerce/support.ts';
import { newOrder, ship } from '../shipping/support.ts';
import { TO, provision } from '../communications/support.ts';
import { cardBody } from '../payments/support.ts';
import { createOAuthClient, revokeOAuthClient } from '../../domain/identity/public.ts';
import { permissionScopes } from '../../domain/registry.ts';
import type { TestPlatform } from '../support/platform.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';

/**
 * Reads filtered by one customer, project, vendor, called number or status use an index that leads
 * with that filter, and customer and product search use their trigram indexes (migrations
 * 0162–0174; docs/platform.md, "Lists"), so they cost what they return, not the size of the
 * account. Each case makes its rows through the API, copies them in SQL to 3,000 rows of 300 other
 * customers (another vendor, other numbers, another status; 60,000 other customers for the customer
 * search), and calls the API. The test records the statements the platform sends while it answers,
 * and asks PostgreSQL for the plan of each one, with its own parameters, on that data. Without the
 * index, each plan reads the account's rows instead, and the test fails.
 */

// The sandbox carrier's calls at 20 ms a call second, so the call below ends while the file runs.
useEnv({ COMMUNICATIONS_SANDBOX_SECOND_MS: '20' });

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({
  worker: true, ownAccount: true,
  env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_DAY: '1000000', RATE_LIMIT_CONCURRENCY: '100' },
}, (t) => ({ platform, http, key } = t));

const COPIES = 3000;
const OTHERS = 300;

/** `table`'s row `id` copied `COPIES` times, with new ids and the columns of `overrides` (SQL over `g`, 1…COPIES). */
async function copies(table: string, id: string, overrides: Record<string, string>): Promise<void> {
  const set = Object.entries({ id: `t.id || '_' || g`, ...overrides }).map(([column, sql]) => `'${column}', ${sql}`).join(', ');
  await seed(
    `insert into ${table}
     select (jsonb_populate_record(null::${table}, to_jsonb(t) || jsonb_build_object(${set}))).*
       from ${table} t, generate_series(1, ${COPIES}) g where t.id = $1`,
    [id],
  );
  await seed(`analyze ${table}`);
}
/**
 * A statement that fills a table, on a connection of its own: it writes thousands of rows, which
 * on CI's shared cores can outlast the platform pool's 5 s statement timeout.
 */
async function seed(text: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: platform.dbUrl });
  await client.connect();
  try {
    await client.query(text, values);
  } finally {
    await client.end();
  }
}

const otherCustomer = `'cus_other_' || (g % ${OTHERS})`;

interface Sent { text: string; values: unknown[] }
let restore: (() => void) | undefined;
afterEach(() => restore?.());

/** The statements the platform sends to PostgreSQL while `act` runs (its one pool's clients, whatever their class). */
async function statementsOf(act: () => Promise<void>): Promise<Sent[]> {
  const sent: Sent[] = [];
  const pool = await nativePool(platform.orm);
  const client = await pool.connect();
  const proto = Object.getPrototypeOf(client) as { query: (...args: any[]) => unknown };
  client.release();
  const query = proto.query;
  proto.query = function (this: unknown, ...args: any[]) {
    const [config, values] = args;
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text === 'string') sent.push({ text, values: (Array.isArray(values) ? values : config?.values) ?? [] });
    return query.apply(this, args);
  };
  restore = () => { proto.query = query; };
  try {
    await act();
  } finally {
    restore();
    restore = undefined;
  }
  return sent;
}

/** The indexes the plan of `statement` (run with its own parameters) reads. */
async function indexesOf(statement: Sent): Promise<string[]> {
  const [row] = await platform.sql<{ 'QUERY PLAN': unknown }>(`explain (format json) ${statement.text}`, statement.values);
  return [...JSON.stringify(row!['QUERY PLAN']).matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]!);
}

/**
 * Every statement sent during `act` that reads `table` and names `column` (or matches `column`, a
 * pattern, where the column's name alone also appears in other reads), each with the indexes its
 * plan reads.
 */
async function plansOf(table: string, column: string | RegExp, act: () => Promise<void>): Promise<string[][]> {
  const filter = typeof column === 'string' ? new RegExp(`\\b${column}\\b`, 'i') : column;
  const reads = (await statementsOf(act)).filter((s) =>
    new RegExp(`from\\s+"?${table}"?\\b`, 'i').test(s.text) && filter.test(s.text) && /^\s*select/i.test(s.text));
  expect(reads.length, `no statement read ${table} by ${column}`).toBeGreaterThan(0);
  return Promise.all(reads.map(indexesOf));
}

async function get(path: string): Promise<any> {
  const res = await http(path, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('reads filtered by a customer, project, vendor or called number', () => {
  it("a customer's events (GET /v3/events?customer_id=…) read events_scope_customer", async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Needle', email: 'needle@example.com' });
    expect((await http(`/v3/customers/${customer.id}`, { key, method: 'PATCH', body: { name: 'Needle Eye' } })).status).toBe(200);
    const [event] = await platform.sql<{ id: string }>('select id from events where customer_id = $1', [customer.id]);
    // Of another kind too, so that the kind-prefix case below finds its own kind rare.
    await copies('events', event!.id, { customer_id: otherCustomer, type: `'order.updated'`, dispatched_at: 'now()' });

    const plans = await plansOf('events', 'customer_id', async () => {
      const page = await get(`/v3/events?customer_id=${customer.id}`);
      expect(page.data.map((e: any) => e.id)).toEqual([event!.id]);
    });
    for (const indexes of plans) expect(indexes).toContain('events_scope_customer');
  });

  it('events of a kind prefix (GET /v3/events?type=customer.*) read events_scope_type_pattern, which serves LIKE in any collation (C.UTF-8 here)', async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Prefixed', email: 'prefixed@example.com' });
    expect((await http(`/v3/customers/${customer.id}`, { key, method: 'PATCH', body: { name: 'Prefixed Too' } })).status).toBe(200);
    const [event] = await platform.sql<{ id: string }>("select id from events where customer_id = $1 and type = 'customer.updated'", [customer.id]);
    await copies('events', event!.id, { type: `'order.created'`, customer_id: otherCustomer, dispatched_at: 'now()' });

    // Reads by id (the dispatcher's, the API's) name the column too: only the kind filters count.
    const plans = await plansOf('events', /"type" (like|in) /i, async () => {
      const page = await get('/v3/events?type=customer.*&limit=100');
      expect(page.data.map((e: any) => e.id)).toContain(event!.id);
      for (const e of page.data) expect(e.type).toMatch(/^customer\./);
      expect((await get('/v3/events?type=customer.updated&limit=100')).data.map((e: any) => e.id)).toContain(event!.id);
    });
    for (const indexes of plans) expect(indexes).toContain('events_scope_type_pattern');
  });

  it("a customer's journey (and the customer_metrics of its events) reads payments_scope_customer", async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Payer', email: 'payer@example.com' });
    const paid = await http('/v3/payments/process', { key, body: { amount: 1500, currency: 'USD', customer_id: customer.id, payment_method: cardBody('4242424242424242') } });
    expect(paid.status, paid.text).toBe(201);
    await copies('payments', paid.body.id, { customer_id: otherCustomer, request_idempotency_key: 'null', workflow_id: `'payment-' || t.id || '_' || g` });

    const plans = await plansOf('payments', 'customer_id', async () => {
      const journey = await get(`/v3/customers/${customer.id}/journey`);
      expect(journey.touchpoints.filter((t: any) => t.type === 'payment').map((t: any) => t.ref)).toEqual([paid.body.id]);
    });
    expect(plans.length).toBeGreaterThanOrEqual(2); // the numbers, and the touchpoints shown
    for (const indexes of plans) expect(indexes).toContain('payments_scope_customer');
  });

  it('financial transactions by customer and by project read their indexes', async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Ledger', email: 'ledger@example.com' });
    const project = await create(http, key, '/v3/projects', { name: 'Fit-out', budget: 1000, start_date: '2026-01-01', end_date: '2026-12-31', customer_id: customer.id });
    const posted = await create(http, key, '/v3/financial/transactions', { type: 'revenue', amount: 25, currency: 'USD', customer_id: customer.id, project_id: project.id });
    await copies('financial_transactions', posted.id, { customer_id: otherCustomer, project_id: `'prj_other_' || (g % ${OTHERS})` });
    await copies('projects', project.id, { customer_id: otherCustomer });

    const byCustomer = await plansOf('financial_transactions', 'customer_id', async () => {
      expect((await get(`/v3/financial/transactions?customer_id=${customer.id}`)).data.map((t: any) => t.id)).toEqual([posted.id]);
    });
    for (const indexes of byCustomer) expect(indexes).toContain('financial_transactions_scope_customer');
    const byProject = await plansOf('financial_transactions', 'project_id', async () => {
      expect((await get(`/v3/financial/transactions?project_id=${project.id}`)).data.map((t: any) => t.id)).toEqual([posted.id]);
    });
    for (const indexes of byProject) expect(indexes).toContain('financial_transactions_scope_project');
    const projects = await plansOf('projects', 'customer_id', async () => {
      expect((await get(`/v3/projects?customer_id=${customer.id}`)).data.map((p: any) => p.id)).toEqual([project.id]);
    });
    for (const indexes of projects) expect(indexes).toContain('projects_scope_customer');
  });

  it("a vendor's purchase orders (GET /v3/procurement/orders?vendor_id=…) read procurement_orders_scope_vendor", async () => {
    const needle = await create(http, key, '/v3/vendors', { name: 'Rare supplier', email: 'rare@vendor.test' });
    const busy = await create(http, key, '/v3/vendors', { name: 'Busy supplier', email: 'busy@vendor.test' });
    const order = await create(http, key, '/v3/procurement/orders', { vendor_id: busy.id, items: [{ description: 'Bolts', quantity: 1, unit_price: 5, currency: 'USD' }] });
    const mine = await create(http, key, '/v3/procurement/orders', { vendor_id: needle.id, items: [{ description: 'Nuts', quantity: 1, unit_price: 5, currency: 'USD' }] });
    await copies('procurement_orders', order.id, {});

    const plans = await plansOf('procurement_orders', 'vendor_id', async () => {
      expect((await get(`/v3/procurement/orders?vendor_id=${needle.id}`)).data.map((o: any) => o.id)).toEqual([mine.id]);
    });
    for (const indexes of plans) expect(indexes).toContain('procurement_orders_scope_vendor');
  });

  it('calls to one number (GET /v3/communications/calls?to_number=…) read comm_calls_scope_to', async () => {
    const from = (await provision(http, key)).number;
    const call = await create(http, key, '/v3/communications/calls', { to_number: TO.answered, from_number: from });
    await copies('comm_calls', call.id, { to_number: `'+1212555' || lpad((g % ${OTHERS})::text, 4, '0')`, request_idempotency_key: 'null', workflow_id: `'call-' || t.id || '_' || g` });

    const plans = await plansOf('comm_calls', 'to_number', async () => {
      expect((await get(`/v3/communications/calls?to_number=${encodeURIComponent(TO.answered)}`)).data.map((c: any) => c.id)).toEqual([call.id]);
    });
    for (const indexes of plans) expect(indexes).toContain('comm_calls_scope_to');
  });

  it('customers by email (GET /v3/customers?email=…) read customers_scope_email, whatever the case asked', async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Mailed', email: 'Mailed.One@Example.com' });
    await copies('customers', customer.id, { email: `'other' || g || '@example.com'` });
    const plans = await plansOf('customers', 'email', async () => {
      expect((await get('/v3/customers?email=MAILED.one@example.com')).data.map((c: any) => c.id)).toEqual([customer.id]);
    });
    for (const indexes of plans) expect(indexes).toContain('customers_scope_email');
  });

  it("a SKU's marketplace listings (GET /v3/marketplace/{marketplace}/listings?sku=…) read marketplace_listings_scope_sku", async () => {
    const shop = await openShop(http, key);
    const product = await stockedProduct(http, key, shop, 'LISTED-1', 5, { price: 2500 });
    expect((await http('/v3/marketplace/amazon/listings/sync', { key, body: { store_id: shop.storeId } })).status).toBe(200);
    const [listing] = await platform.sql<{ id: string }>('select id from marketplace_listings where product_id = $1', [product.id]);
    // 3,000 other products of the store, each listed.
    await copies('products', product.id, { sku: `'OTHER-' || g` });
    await seed(
      `insert into marketplace_listings
       select (jsonb_populate_record(null::marketplace_listings, to_jsonb(l) || jsonb_build_object(
                'id', l.id || '_' || g, 'product_id', l.product_id || '_' || g, 'sku', 'OTHER-' || g, 'external_id', l.external_id || '-' || g))).*
         from marketplace_listings l, generate_series(1, ${COPIES}) g where l.id = $1`,
      [listing!.id],
    );
    await seed('analyze marketplace_listings');

    const plans = await plansOf('marketplace_listings', 'sku', async () => {
      expect((await get('/v3/marketplace/amazon/listings?sku=LISTED-1')).data.map((l: any) => l.id)).toEqual([listing!.id]);
    });
    for (const indexes of plans) expect(indexes).toContain('marketplace_listings_scope_sku');
  });

  it("a search (GET /v3/customers?q=…) reads customers_search, with the same matches as before it", async () => {
    const company = await create(http, key, '/v3/customers', { name: 'Plain', email: 'plain@example.com', company: { name: 'Quokka Logistics' } });
    const named = await create(http, key, '/v3/customers', { first_name: 'Ada', last_name: 'Quokkason', email: 'ada@example.com' });
    // A trigram index pays off from a few tens of thousands of rows (below that PostgreSQL rightly
    // reads the table: 33,000 customers, 20 ms either way; 300,000, 1.1 ms with it against 119 ms).
    await seed(
      `insert into customers (id, account_id, livemode, email, name, company, created_at, updated_at)
       select c.id || '_' || g, c.account_id, c.livemode, 'other' || g || '@example.com', 'Other ' || g, jsonb_build_object('name', 'Firm ' || g), now(), now()
         from customers c, generate_series(1, 60000) g where c.id = $1`,
      [company.id],
    );
    await seed('analyze customers');

    const plans = await plansOf('customers', 'email', async () => {
      const found = (await get('/v3/customers?q=quokka')).data.map((c: any) => c.id);
      expect(new Set(found)).toEqual(new Set([company.id, named.id]));
      expect((await get('/v3/customers?q=' + encodeURIComponent('Logistics' + String.fromCharCode(32) + 'Ada'))).data).toEqual([]); // never across two fields
    });
    for (const indexes of plans) expect(indexes).toContain('customers_search');
  });

  it('a product search (GET /v3/catalog/products?q=…, GET /v3/stores/{id}/products?q=…) reads products_search', async () => {
    const store = await create(http, key, '/v3/stores', { name: 'Search shop', default_currency: 'USD' });
    const products = `/v3/stores/${store.id}/products`;
    const byName = await create(http, key, products, { name: 'Quokka lamp', sku: 'LAMP-1', price: 1000 });
    const bySku = await create(http, key, products, { name: 'Desk', sku: 'QUOKKA-DESK', price: 2000 });
    const byDescription = await create(http, key, products, { name: 'Chair', sku: 'CHAIR-1', price: 3000, description: 'Sized for a quokka.' });
    // Product texts are longer than customers': PostgreSQL takes the index from a few thousand
    // (where reading 10,000 products' texts costs 25–50 ms against 0.3 with it).
    await seed(
      `insert into products
       select (jsonb_populate_record(null::products, to_jsonb(p) || jsonb_build_object(
                'id', p.id || '_' || g, 'sku', 'OTHER-' || g, 'name', 'Other item ' || g,
                'description', 'A plain item in colour ' || (g % 17) || ', size ' || (g % 5) || ', described at the length of a catalogue entry.'))).*
         from products p, generate_series(1, ${COPIES}) g where p.id = $1`,
      [byName.id],
    );
    // VACUUM merges the index's pending list (GIN's fast update), as autovacuum does after a bulk
    // load; before that PostgreSQL rightly reckons the index dearer than the table.
    await seed('vacuum analyze products');

    const expected = new Set([byName.id, bySku.id, byDescription.id]);
    const plans = await plansOf('products', 'description', async () => {
      expect(new Set((await get('/v3/catalog/products?q=QUOKKA')).data.map((p: any) => p.id))).toEqual(expected);
      expect(new Set((await get(`${products}?q=quokka`)).data.map((p: any) => p.id))).toEqual(expected);
      expect((await get('/v3/catalog/products?q=' + encodeURIComponent('lamp LAMP'))).data).toEqual([]); // never across two fields
    });
    expect(plans.length).toBeGreaterThanOrEqual(2);
    for (const indexes of plans) expect(indexes).toContain('products_search');
  });
});

describe('writes that find their rows by one column', () => {
  /** The statements sent during `act` that start with `verb … table`, each with the indexes its plan reads. */
  async function writePlans(verb: 'update' | 'delete from', table: string, act: () => Promise<void>): Promise<string[][]> {
    const writes = (await statementsOf(act)).filter((s) => new RegExp(`^\\s*${verb}\\s+"?${table}"?\\b`, 'i').test(s.text));
    expect(writes.length, `no statement ${verb} ${table}`).toBeGreaterThan(0);
    return Promise.all(writes.map(indexesOf));
  }

  it("revoking an OAuth client finds the client's provider rows through oidc_models_client (migration 0168)", async () => {
    const client = await createOAuthClient(platform.orm, {
      accountId: await platform.newAccount(), name: 'Indexed app', type: 'confidential', redirectUris: ['https://app.example.com/cb'],
      grantTypes: ['authorization_code', 'refresh_token'], scopes: ['openid', 'crm:read'],
    }, permissionScopes);
    // Three tokens of this client among 3,000 of 300 others.
    await seed(
      `insert into oidc_models (model, id, payload, expires_at)
       select 'AccessToken', 'indexed-' || g, jsonb_build_object('clientId', case when g <= 3 then $1 else 'oac_other_' || (g % ${OTHERS}) end), now() + interval '1 hour'
         from generate_series(1, ${COPIES}) g`,
      [client.id],
    );
    await seed('analyze oidc_models');

    const plans = await writePlans('update', 'oidc_models', async () => {
      expect((await revokeOAuthClient(platform.orm, { accountId: client.account_id, clientId: client.id })).status).toBe('revoked');
    });
    for (const indexes of plans) expect(indexes).toContain('oidc_models_client');
    const [left] = await platform.sql<{ revoked: number; others: number }>(
      `select count(*) filter (where payload->>'clientId' = $1 and revoked_at is not null)::int as revoked,
              count(*) filter (where payload->>'clientId' <> $1 and revoked_at is not null)::int as others
         from oidc_models where id like 'indexed-%'`, [client.id]);
    expect(left).toEqual({ revoked: 3, others: 0 });
  });

  it("archiving an invoice template removes its assignments within the account, through the table's key", async () => {
    const template = await create(http, key, '/v3/invoice_templates', { name: 'Indexed template' });
    const customer = await create(http, key, '/v3/customers', { name: 'Templated', email: 'templated@example.com' });
    const assigned = await http(`/v3/customers/${customer.id}/invoice_template`, { key, method: 'PUT', body: { template_id: template.id } });
    expect(assigned.status, assigned.text).toBe(200);
    // Another account's assignments (3,000 of them), which the archive has no business reading.
    await seed(
      `insert into invoice_template_assignments (account_id, livemode, subject_id, template_id, created_at)
       select $1, false, 'cus_other_' || g, $2, now() from generate_series(1, ${COPIES}) g`,
      [await platform.newAccount(), template.id],
    );
    await seed('analyze invoice_template_assignments');

    const plans = await writePlans('delete from', 'invoice_template_assignments', async () => {
      const archived = await http(`/v3/invoice_templates/${template.id}/archive`, { key, method: 'POST' });
      expect(archived.status, archived.text).toBe(200);
    });
    for (const indexes of plans) expect(indexes).toContain('invoice_template_assignments_pkey');
    expect(await platform.sql('select subject_id from invoice_template_assignments where subject_id = $1', [customer.id])).toEqual([]);
  });
});

describe('lists filtered by status', () => {
  /**
   * A row made through the API is copied 3,000 times in another status; the list asked for the
   * row's own status reads the status index, and answers with rows of that status only (none of the
   * copies). The row's status is read just before: its workflow may move it on meanwhile, which
   * changes what the list answers, not the plan.
   */
  async function listedByStatus(opts: { table: string; id: string; list: string; other: string; index: string; overrides?: Record<string, string> }) {
    const [row] = await platform.sql<{ status: string }>(`select status from ${opts.table} where id = $1`, [opts.id]);
    expect(row!.status).not.toBe(opts.other);
    await copies(opts.table, opts.id, { status: `'${opts.other}'`, ...opts.overrides });

    const plans = await plansOf(opts.table, /"status" in \(/i, async () => {
      const page = await get(`${opts.list}?status=${row!.status}&limit=100`);
      for (const item of page.data) {
        expect(item.status).toBe(row!.status);
        expect(item.id.startsWith(`${opts.id}_`), `${item.id} is a copy`).toBe(false);
      }
    });
    for (const indexes of plans) expect(indexes).toContain(opts.index);
  }

  it('orders (GET /v3/orders?status=…) read orders_scope_status', async () => {
    const shop = await openShop(http, key);
    await stockedProduct(http, key, shop, 'STATUS-SKU', 10);
    const order = await create(http, key, '/v3/orders', orderBody(shop, [{ sku: 'STATUS-SKU', quantity: 1 }]));
    await listedByStatus({
      table: 'orders', id: order.id, list: '/v3/orders', other: 'canceled', index: 'orders_scope_status',
      overrides: { workflow_id: `'order-' || t.id || '_' || g`, payment_id: 'null' },
    });
  });

  it('subscriptions and invoices (GET /v3/subscriptions?status=…, GET /v3/invoices?status=…) read their status indexes', async () => {
    const customer = await create(http, key, '/v3/customers', { name: 'Subscriber', email: 'subscriber@example.com' });
    const plan = await create(http, key, '/v3/plans', { name: 'Indexed', currency: 'USD', interval: 'monthly', amount: 1500 });
    const subscription = await create(http, key, '/v3/subscriptions', { customer_id: customer.id, plan_id: plan.id, payment_method: cardBody('4242424242424242') });
    await listedByStatus({ table: 'subscriptions', id: subscription.id, list: '/v3/subscriptions', other: 'canceled', index: 'subscriptions_scope_status' });

    const invoice = await create(http, key, '/v3/invoices', {
      customer_id: customer.id, currency: 'USD', line_items: [{ description: 'Setup', quantity: 1, unit_amount: 5000 }],
    });
    await listedByStatus({ table: 'invoices', id: invoice.id, list: '/v3/invoices', other: 'void', index: 'invoices_scope_status', overrides: { number: 'null' } });
  });

  it('shipments (GET /v3/shipping?status=…) read shipping_shipments_scope_status', async () => {
    const { orderId } = await newOrder(http, key);
    const shipment = await ship(http, key, orderId);
    await listedByStatus({
      table: 'shipping_shipments', id: shipment.id, list: '/v3/shipping', other: 'cancelled', index: 'shipping_shipments_scope_status',
      overrides: { tracking_number: `t.tracking_number || '_' || g`, workflow_id: `t.workflow_id || '_' || g` },
    });
  });

  it('calls (GET /v3/communications/calls?status=…) read comm_calls_scope_status', async () => {
    const from = (await provision(http, key)).number;
    const call = await create(http, key, '/v3/communications/calls', { to_number: TO.answered, from_number: from });
    await listedByStatus({
      table: 'comm_calls', id: call.id, list: '/v3/communications/calls', other: 'failed', index: 'comm_calls_scope_status',
      overrides: { request_idempotency_key: 'null', workflow_id: `'call-' || t.id || '_' || g` },
    });
  });
});
