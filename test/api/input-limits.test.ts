import { createHash } from 'node:crypto';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, jsonDepthExceeds } from '../../api/http/body.ts';
import { negotiate } from '../../api/http/negotiate.ts';
import { errorHandler, toApiError } from '../../api/http/problems.ts';
import type { Logger } from '../../platform/logger.ts';
import { toXml } from '../../api/http/xml.ts';
import { isCalendarDate, isIsoTimestamp } from '../../platform/dates.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

/** API-CONVENTIONS "Input limits" and the hardening items: the same answer on every operation. */

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({}, (t) => ({ platform, http, key } = t));

const card = { number: '4242424242424242', exp_month: 12, exp_year: 2040, cvc: '123' };
const address = { line1: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' };

type Case = [operation: string, method: string, path: string, body: Record<string, unknown>, badPath: string];

/** A NUL (or another control character) in a nested string field of each operation's body. */
const nulCases: Case[] = [
  ['create customer', 'POST', '/v3/customers', { name: 'Ada', company: { name: 'Acme\u0000Corp' } }, 'company.name'],
  ['create order', 'POST', '/v3/orders', { store_id: 'sto_x', customer_id: 'cus_x', currency: 'USD', line_items: [{ sku: 'A-1', quantity: 1 }, { sku: 'B\u0000', quantity: 1 }], shipping_address: address }, 'line_items.1.sku'],
  ['process payment', 'POST', '/v3/payments/process', { amount: 100, currency: 'USD', payment_method: { type: 'card', card: { ...card, cvc: '12\u00003' } } }, 'payment_method.card.cvc'],
  ['create subscription', 'POST', '/v3/subscriptions', { customer_id: 'cus_x', plan_id: 'plan_x', metadata: { note: 'a\u001bb' } }, 'metadata.note'],
  ['create webhook', 'POST', '/v3/webhooks', { url: 'https://example.com/hook\u0000', events: ['customer.created'] }, 'url'],
  ['update customer', 'PATCH', '/v3/customers/cus_x', { custom_fields: { list: ['ok', { deep: 'x\u0008' }] } }, 'custom_fields.list.1.deep'],
];

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
}

describe('control characters', () => {
  it.each(nulCases)('%s: a control character in %s is 422 naming the field', async (_op, method, path, body, badPath) => {
    const res = await http(path, { key, method, body });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    const error = res.body.errors.find((e: { path: string }) => e.path === badPath);
    expect(error, JSON.stringify(res.body.errors)).toBeDefined();
    expect(error.message).toMatch(/control character U\+00[01][0-9A-F] \(\w+\) at position \d+; remove it/);
  });

  it('names a control character in an object key, shown escaped', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'Ada', metadata: { 'bad\u0000key': 'v' } } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'metadata.bad\\u0000key', message: expect.stringContaining('field name') }));
  });

  it('reports every offending field at once, with the other validation errors', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'a\u0001', email: 'b\u0002@x.y', customer_type: 'nope' } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['customer_type', 'email', 'name']);
  });

  it('accepts tab, CR and LF', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'Ada\tLovelace', metadata: { note: 'line 1\r\nline 2' } } });
    expect(res.status).toBe(201);
    expect(res.body.metadata.note).toBe('line 1\r\nline 2');
  });

  it.each([
    ['/v3/customers?q=a%07b', 'q'],
    ['/v3/orders?customer_id=cus_%07', 'customer_id'],
    ['/v3/webhooks?cursor=%07', 'cursor'],
    ['/v3/subscriptions?limit=5&customer_id=%00', 'customer_id'],
  ])('a control character in a query parameter is 422: %s', async (path, param) => {
    const res = await http(path, { key });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: param, message: expect.stringContaining('control character') }));
  });

  it.each([
    ['/v3/customers/cus_%00x', 'customer_id'],
    ['/v3/payments/pay_%01/status', 'payment_id'],
    ['/v3/webhooks/whk_%1F', 'webhook_id'],
  ])('a control character in a path parameter is 422: %s', async (path, param) => {
    const res = await http(path, { key });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: param }));
  });
});

describe('JSON nesting', () => {
  it.each([
    ['/v3/customers', { name: 'Ada', custom_fields: nested(MAX_JSON_DEPTH) }],
    ['/v3/orders', { metadata: nested(MAX_JSON_DEPTH) }],
    ['/v3/payments/process', { metadata: nested(MAX_JSON_DEPTH) }],
    ['/v3/subscriptions', { metadata: nested(MAX_JSON_DEPTH) }],
    ['/v3/webhooks', { metadata: nested(MAX_JSON_DEPTH) }],
  ])('a body nested 65 levels deep is 400 json_too_deep: %s', async (path, body) => {
    const res = await http(path, { key, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('json_too_deep');
    expect(res.body.detail).toContain('64 levels');
  });

  it('64 levels pass the depth check (and go on to validation)', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'Ada', custom_fields: nested(MAX_JSON_DEPTH - 1) } });
    expect(res.status).not.toBe(400);
  });

  it('refuses a very deep body without overflowing the stack', async () => {
    const res = await http('/v3/customers', { key, rawBody: '['.repeat(500_000) + ']'.repeat(500_000), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('json_too_deep');
  });

  it('counts brackets outside strings only', () => {
    const inString = Buffer.from(JSON.stringify({ a: '['.repeat(200), b: '\\"[[[' }));
    expect(jsonDepthExceeds(inString, 2)).toBe(false);
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify(nested(3)).padEnd(10, ' ')), 2)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify(nested(2)).padEnd(10, ' ')), 2)).toBe(false);
  });
});

describe('integer bounds', () => {
  const big = 2 ** 31;
  const unsafe = 2 ** 53 + 2;
  it.each<[string, string, string, Record<string, unknown>, string, string]>([
    ['product safety_stock (int4)', 'POST', '/v3/stores/sto_x/products', { name: 'P', sku: 'P-1', price: 100, inventory: { safety_stock: big } }, 'inventory.safety_stock', '1000000000'],
    ['product reorder_point (int4)', 'POST', '/v3/stores/sto_x/products', { name: 'P', sku: 'P-1', price: 100, inventory: { reorder_point: big } }, 'inventory.reorder_point', '1000000000'],
    ['stock reorder_point (int4)', 'PUT', '/v3/inventory/SKU-1/stock', { warehouse_id: 'wh_x', quantity: 1, operation: 'set', reorder_point: big }, 'reorder_point', '1000000000'],
    ['order quantity (int4)', 'POST', '/v3/orders', { store_id: 'sto_x', customer_id: 'cus_x', currency: 'USD', line_items: [{ sku: 'A', quantity: big }], shipping_address: address }, 'line_items.0.quantity', '10000'],
    ['subscription trial days (int4)', 'POST', '/v3/subscriptions', { customer_id: 'cus_x', plan_id: 'plan_x', trial_period_days: big }, 'trial_period_days', '730'],
    ['payment amount over 2^53', 'POST', '/v3/payments/process', { amount: unsafe, currency: 'USD', payment_method: { type: 'card', card } }, 'amount', '9007199254740991'],
    ['product price over 2^53', 'POST', '/v3/stores/sto_x/products', { name: 'P', sku: 'P-1', price: unsafe }, 'price', '9007199254740991'],
    ['split total far past a bigint', 'POST', '/v3/payments/marketplace/split', { total_amount: 1e20, currency: 'USD', platform_fee: 0, splits: [{ destination: 'acct_1', percent: 100 }], payment_method: { type: 'card', card } }, 'total_amount', '999999999.99'],
  ])('%s is 422 naming the bound', async (_name, method, path, body, badPath, bound) => {
    const res = await http(path, { key, method, body });
    expect(res.status).toBe(422);
    const error = res.body.errors.find((e: { path: string }) => e.path === badPath);
    expect(error, JSON.stringify(res.body.errors)).toBeDefined();
    expect(error.message).toContain(bound);
  });

  it.each([
    ['/v3/legacy/products?page=2147483648', 'page', '2147483647'],
    ['/v3/customers?limit=9007199254740993', 'limit', '9007199254740991'],
    ['/v3/customers?limit=-9007199254740993', 'limit', '-9007199254740991'],
  ])('an out-of-range integer query parameter is 422: %s', async (path, param, bound) => {
    const res = await http(path, { key });
    expect(res.status).toBe(422);
    const error = res.body.errors.find((e: { path: string }) => e.path === param);
    expect(error.message).toContain(bound);
  });

  it('maps PostgreSQL data exceptions to 422, never 500', () => {
    for (const code of ['22003', '22P02', '22007', '22008', '22021']) {
      const direct = toApiError(Object.assign(new Error('value "2147483648" is out of range for type integer'), { code }));
      expect(direct.status).toBe(422);
      expect(direct.code).toBe('validation_failed');
      expect(direct.detail).not.toContain('2147483648');
      const wrapped = toApiError(new Error('insert failed', { cause: Object.assign(new Error('x'), { code }) }));
      expect(wrapped.status).toBe(422);
    }
    expect(toApiError(Object.assign(new Error('x'), { code: '23505' })).status).toBe(500);
  });

  it('logs such a refusal for the operators by table and column, never the value', () => {
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const logger = { warn: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }), error: () => {} } as unknown as Logger;
    const pgError = Object.assign(new Error('invalid input syntax for type integer: "4242424242424242"'), { code: '22P02', table: 'payments', column: 'amount', routine: 'pg_strtoint32_safe' });
    const res = { headersSent: true, locals: { requestId: 'req_test' }, end: () => {} };
    errorHandler(logger)(new Error('insert failed', { cause: pgError }), { path: '/v3/payments' } as never, res as never, () => {});
    expect(lines).toEqual([{
      msg: 'the database refused a value that validation let through',
      fields: { request_id: 'req_test', path: '/v3/payments', database: { code: '22P02', table: 'payments', column: 'amount', routine: 'pg_strtoint32_safe' } },
    }]);
    expect(JSON.stringify(lines)).not.toContain('4242');
    errorHandler(logger)(Object.assign(new Error('x'), { code: '23505' }), { path: '/v3/payments' } as never, res as never, () => {});
    expect(lines).toHaveLength(1);
  });
});

describe('calendar dates', () => {
  it.each([
    ['/v3/customers?created_gte=2025-02-30', 'created_gte'],
    ['/v3/orders?created_lte=2025-04-31', 'created_lte'],
    ['/v3/events?created_gte=2025-02-29T10:00:00Z', 'created_gte'],
    ['/v3/reports/sales-summary?start_date=2025-02-30&end_date=2025-03-05&currency=USD', 'start_date'],
  ])('an impossible date is 422, not rolled over: %s', async (path, param) => {
    const res = await http(path, { key });
    expect(res.status).toBe(422);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: param }));
  });

  it('still suggests the ISO form for DD/MM/YYYY', async () => {
    const res = await http('/v3/orders?created_gte=30/02/2025', { key });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].message).toContain('2025-02-30');
  });

  it('accepts real dates, leap days included', async () => {
    expect((await http('/v3/customers?created_gte=2024-02-29&created_lte=2024-12-31T23:59:59Z', { key })).status).toBe(200);
  });

  it('refuses an impossible key expiry', async () => {
    await expect(platform.newKey({ expires: '2099-02-30' })).rejects.toMatchObject({ status: 422, errors: [expect.objectContaining({ path: 'expires' })] });
    await expect(platform.newKey({ expires: '2096-02-29' })).resolves.toMatch(/^bp_test_/);
  });

  it('checks the calendar strictly', () => {
    expect(['2024-02-29', '2000-02-29', '2025-12-31'].every(isCalendarDate)).toBe(true);
    expect(['2025-02-29', '1900-02-29', '2025-13-01', '2025-00-10', '2025-06-31', '2025-1-01'].some(isCalendarDate)).toBe(false);
    expect(isIsoTimestamp('2025-03-14T09:30:00.123+05:30')).toBe(true);
    expect(['2025-03-14T24:00:00Z', '2025-03-14T09:60:00Z', '2025-02-30T00:00:00Z', '2025-03-14T09:30:00'].some(isIsoTimestamp)).toBe(false);
  });
});

describe('XML responses', () => {
  it('stay well-formed when a stored value holds characters XML 1.0 forbids', async () => {
    const created = await http('/v3/customers', { key, body: { name: 'Ada', metadata: { note: 'x' } } });
    expect(created.status).toBe(201);
    await platform.sql(`update customers set name = $1, metadata = $2 where id = $3`, ['Ada\u0001\u0002Lovelace\uFFFE', { 'k\u0002': 'v\u001f' }, created.body.id]);
    const xml = await http(`/v3/customers/${created.body.id}`, { key, headers: { accept: 'application/xml' } });
    expect(xml.status).toBe(200);
    expect(XMLValidator.validate(xml.text)).toBe(true);
    expect(xml.text).toContain('<name>Ada\uFFFD\uFFFDLovelace\uFFFD</name>');
  });

  it('escapes markup, keeps tab/CR/LF and replaces lone surrogates', () => {
    const text = toXml('r', { a: 'q<&>"\'\r\n\t', '1bad': 'x\uD800y', 'ok\u0003': null });
    expect(XMLValidator.validate(text)).toBe(true);
    expect(text).toContain('<a>q&lt;&amp;&gt;&quot;&apos;&#13;\n\t</a>');
    expect(text).toContain('<entry key="1bad">x\uFFFDy</entry>');
    expect(text).toContain('<entry key="ok\uFFFD" nil="true"/>');
  });
});

describe('content negotiation', () => {
  it.each<[string | undefined, 'json' | 'xml' | null]>([
    [undefined, 'json'],
    ['*/*', 'json'],
    ['application/json;q=0, */*', 'xml'],
    ['text/*', 'xml'],
    ['application/*', 'json'],
    ['application/xml;q=0.5, application/json;q=0.9', 'json'],
    ['application/json;q=0.1, application/xml', 'xml'],
    ['application/json; charset=utf-8', 'json'],
    ['Application/XML', 'xml'],
    ['application/problem+json', 'json'],
    ['text/csv', null],
    ['application/json;q=0', null],
  ])('Accept %s → %s', (accept, format) => {
    expect(negotiate(accept)).toBe(format);
    expect(negotiate(accept)).toBe(format); // from the cache
  });

  it.each([
    ['application/json;q=0, */*', 200, 'application/xml'],
    ['text/*', 200, 'xml'],
    ['application/xml;q=0.5, application/json', 200, 'application/json'],
    ['text/html', 406, 'application/problem+json'],
  ])('over HTTP: Accept %s', async (accept, status, type) => {
    const res = await http('/v3/customers?limit=1', { key, headers: { accept } });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain(type);
  });
});

describe('security headers', () => {
  function expectBase(headers: Headers) {
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('x-frame-options')).toBe('DENY');
    expect(headers.get('referrer-policy')).toBe('no-referrer');
    expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(headers.get('cross-origin-opener-policy')).toBe('same-origin');
  }

  it('on a /v3 response and a problem response, with a CSP that allows nothing', async () => {
    const ok = await http('/v3/customers', { key });
    expect(ok.status).toBe(200);
    expectBase(ok.headers);
    expect(ok.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
    const problem = await http('/v3/customers/cus_missing', { key });
    expect(problem.status).toBe(404);
    expectBase(problem.headers);
    const unauthenticated = await http('/v3/customers');
    expect(unauthenticated.status).toBe(401);
    expectBase(unauthenticated.headers);
  });

  it('HSTS on HTTPS (behind the trusted proxy) only', async () => {
    expect((await http('/healthz')).headers.get('strict-transport-security')).toBeNull();
    const https = await http('/healthz', { headers: { 'x-forwarded-proto': 'https' } });
    expect(https.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
  });

  it('/docs gets a CSP that allows its assets and its one inline script, and they load', async () => {
    const page = await http('/docs');
    expect(page.status).toBe(200);
    expectBase(page.headers);
    const csp = page.headers.get('content-security-policy')!;
    const inline = [...page.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toHaveLength(1);
    expect(csp).toContain(`script-src 'self' 'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`);
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('unsafe-eval');
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js']);
    for (const asset of assets) {
      const res = await fetch(platform.url + asset);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(asset.endsWith('.js') ? /javascript/ : /text\/css/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      await res.arrayBuffer();
    }
    const spec = await http(inline[0]!.match(/url: '([^']+)'/)![1]!);
    expect(spec.status).toBe(200);
    expect(spec.body.openapi).toMatch(/^3\.1/);
  });
});
