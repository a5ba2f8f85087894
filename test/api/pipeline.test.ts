import { XMLParser } from 'fast-xml-parser';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { hashKey } from '../../domain/accounts/keys.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ worker: true }, (t) => ({ platform, http, key } = t));

describe('the /v3 request pipeline', () => {
  it('gives every response a Request-Id that problem documents repeat', async () => {
    const res = await http('/v3/customers/cus_missing', { key });
    expect(res.status).toBe(404);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({
      type: expect.stringContaining('/errors/not_found'), status: 404, code: 'not_found',
      request_id: res.headers.get('request-id'), instance: '/v3/customers/cus_missing',
    });
    expect(res.body.suggestion).toEqual(expect.any(String));
  });

  it('reports every bad field at once, naming each', async () => {
    const res = await http('/v3/customers', {
      key,
      body: { email: 'not-an-email', customer_type: 'b2x', segments: 'vip', company: { annual_revenue: -5 }, colour: 'red' },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    const paths = res.body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['colour', 'company.annual_revenue', 'customer_type', 'email', 'segments']);
  });

  it('rejects the old DD/MM/YYYY dates with a suggestion naming the ISO form', async () => {
    const res = await http('/v3/customers?created_gte=14/03/2025', { key });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ path: 'created_gte' });
    expect(res.body.errors[0].message).toContain('2025-03-14');
  });

  it('answers malformed JSON with 400', async () => {
    const res = await http('/v3/customers', { key, method: 'POST', rawBody: '{"email": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('answers a non-JSON body with 415', async () => {
    const res = await http('/v3/customers', { key, method: 'POST', rawBody: 'email=a@b.c', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('answers a body over 1 MiB with 413', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'x', custom_fields: { blob: 'x'.repeat(1024 * 1024) } } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('answers an unsatisfiable Accept with 406', async () => {
    const res = await http('/v3/customers', { key, headers: { accept: 'text/csv' } });
    expect(res.status).toBe(406);
    expect(res.body.code).toBe('not_acceptable');
  });

  it('serves XML that parses to the same document as the JSON', async () => {
    const created = await http('/v3/customers', {
      key, body: { first_name: 'Zoë', last_name: "O'Brien & Sons", email: 'zoe@example.com', segments: ['vip', 'eu'], metadata: { 'order ref': '<42>' } },
    });
    expect(created.status).toBe(201);
    const xml = await http(`/v3/customers/${created.body.id}`, { key, headers: { accept: 'application/xml' } });
    expect(xml.status).toBe(200);
    expect(xml.headers.get('content-type')).toContain('application/xml');
    const parsed = new XMLParser({ ignoreAttributes: false, parseTagValue: false, isArray: (name) => name === 'item' }).parse(xml.text).customer;
    expect(parsed.id).toBe(created.body.id);
    expect(parsed.first_name).toBe('Zoë');
    expect(parsed.last_name).toBe("O'Brien & Sons");
    expect(parsed.livemode).toBe('false');
    expect(parsed.segments.item).toEqual(['vip', 'eu']);
    expect(parsed.metadata.entry).toMatchObject({ '@_key': 'order ref', '#text': '<42>' });
    expect(parsed.company['@_nil']).toBe('true');
    expect(parsed.created_at).toBe(created.body.created_at);
  });

  it('suggests the nearest route for an unknown path', async () => {
    const res = await http('/v3/custmers', { key });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('route_not_found');
    expect(res.body.suggestion).toContain('/v3/customers');
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await http('/v3/customers/cus_1', { key, method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, PATCH');
  });

  it('routes as Express would: any case, a trailing slash, HEAD, decoded parameters, static before parameter', async () => {
    const created = await http('/v3/customers', { key, body: { name: 'Route Table' } });
    const id = created.body.id as string;
    for (const path of [`/v3/customers/${id}`, `/v3/Customers/${id}`, `/v3/customers/${id}/`]) {
      const res = await http(path, { key });
      expect([path, res.status, res.body.id]).toEqual([path, 200, id]);
    }
    const head = await http(`/v3/customers/${id}`, { key, method: 'HEAD' });
    expect([head.status, head.text]).toEqual([200, '']);
    // The parameter reaches the handler decoded: %5F is "_".
    expect((await http(`/v3/customers/${id.replace('_', '%5F')}`, { key })).body.id).toBe(id);
    const bad = await http('/v3/customers/%E0%A4%A', { key });
    expect([bad.status, bad.body.code]).toEqual([400, 'invalid_path']);
    // /v3/crm/tasks/automation is its own route, not a task whose id is "automation".
    const automation = await http('/v3/crm/tasks/automation', { key });
    expect([automation.status, automation.body.object, automation.body.url]).toEqual([200, 'list', '/v3/crm/tasks/automation']);
  });

  it('answers /v2 with 410 pointing to /v3', async () => {
    const res = await http('/v2/customers');
    expect(res.status).toBe(410);
    expect(res.body.suggestion).toContain('/v3/customers');
    expect(res.headers.get('link')).toContain('</v3/customers>; rel="successor-version"');
  });

  it('reports liveness and readiness (database, Temporal, a polling worker)', async () => {
    const live = await http('/healthz');
    expect([live.status, live.body]).toEqual([200, { status: 'ok' }]);
    let ready = await http('/readyz');
    for (let i = 0; i < 20 && ready.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 250));
      ready = await http('/readyz');
    }
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ postgres: true, temporal: true, worker_polling: true });
  });

  it('logs requests per key for the dashboard off the request path: a held log write delays no response', async () => {
    const own = await platform.newKey();
    const [{ id }] = (await platform.sql<{ id: string }>('select id from api_keys where key_hash = $1', [hashKey(own)])) as [{ id: string }];
    const used = () => platform.sql('select 1 from api_keys where id = $1 and last_used_at is not null', [id]);
    expect(await used()).toHaveLength(0);
    // Hold every write to request_logs (reads still pass) until the end of this transaction.
    const blocker = new pg.Client({ connectionString: platform.dbUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table request_logs in exclusive mode');
      expect((await http('/v3/customers?limit=1', { key: own })).status).toBe(200);
      // The flush of that request is now waiting on the lock…
      const waiting = () => platform.sql(
        "select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%insert into request_logs%' and pid <> pg_backend_pid()");
      for (let i = 0; (await waiting()).length === 0; i++) {
        if (i > 200) throw new Error('the request log flush never started');
        await new Promise((r) => setTimeout(r, 25));
      }
      // …and requests are still answered, their rows waiting in memory.
      expect((await http('/v3/customers?limit=1', { key: own })).status).toBe(200);
      expect((await http('/v3/customers/cus_missing', { key: own })).body.code).toBe('not_found');
      // Unknown routes are answered before authentication, so they belong to no key.
      expect((await http('/v3/custmers?from=logging-test', { key: own })).body.code).toBe('route_not_found');
      expect(await waiting()).toHaveLength(1);
      expect(await platform.sql('select 1 from request_logs where api_key_id = $1', [id])).toEqual([]);
      await blocker.query('commit');
    } finally {
      await blocker.end();
    }
    await platform.api.deps.requestLog.flush();
    expect(await platform.sql('select requests, errors from api_key_daily_usage where api_key_id = $1', [id])).toEqual([{ requests: 3, errors: 1 }]);
    expect(await used()).toHaveLength(1);
    const logged = await platform.sql<{ api_key_id: string | null; status: number }>(
      "select api_key_id, status from request_logs where path = '/v3/custmers' order by id desc limit 1");
    expect(logged).toEqual([{ api_key_id: null, status: 404 }]);
  });
});
