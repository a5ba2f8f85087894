import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_CONCURRENCY: '50' } }, (t) => ({ platform, http, key } = t));

const create = (body: Record<string, unknown>, k = key) => http('/v3/customers', { key: k, body });

describe('customers', () => {
  it('creates a customer with every spec field and reads it back', async () => {
    const body = {
      email: 'Ada@Example.com', first_name: 'Ada', last_name: 'Lovelace', customer_type: 'b2b',
      company: { name: 'Analytical Engines Ltd', industry: 'computing', size: '11-50', annual_revenue: 1250000.5 },
      segments: ['enterprise', 'eu'], custom_fields: { account_manager: 'Charles', tier: 2 }, metadata: { crm_id: '42' },
    };
    const created = await create(body);
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/v3/customers/${created.body.id}`);
    expect(created.body).toMatchObject({
      object: 'customer', livemode: false, email: 'ada@example.com', name: 'Ada Lovelace',
      first_name: 'Ada', last_name: 'Lovelace', customer_type: 'b2b', company: body.company,
      segments: ['enterprise', 'eu'], custom_fields: body.custom_fields, metadata: body.metadata,
    });
    expect(created.body.id).toMatch(/^cus_[0-9a-z]{26}$/);
    expect(created.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const read = await http(`/v3/customers/${created.body.id}`, { key });
    expect(read.body).toEqual(created.body);
  });

  it('accepts the quick-start single name', async () => {
    const created = await create({ name: 'Grace Hopper' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Grace Hopper', first_name: null, last_name: null });
  });

  it('refuses a customer with neither email nor name, and bad metadata', async () => {
    const res = await create({ customer_type: 'b2c', metadata: { ['k'.repeat(41)]: 'v' } });
    expect(res.status).toBe(422);
    const paths = res.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toContain('email');
    expect(paths.some((p: string) => p.startsWith('metadata'))).toBe(true);
  });

  it('updates a customer and records customer.updated with the previous values in the outbox', async () => {
    const created = await create({ email: 'linus@example.com', first_name: 'Linus', metadata: { a: '1', b: '2' } });
    const updated = await http(`/v3/customers/${created.body.id}`, {
      key, method: 'PATCH', body: { last_name: 'Torvalds', metadata: { a: null, c: '3' } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Linus Torvalds', last_name: 'Torvalds', metadata: { b: '2', c: '3' } });
    expect(updated.body.updated_at > created.body.updated_at).toBe(true);

    const events = await platform.sql<{ type: string; data: any; customer_id: string; request_id: string }>(
      'select type, data, customer_id, request_id from events where customer_id = $1', [created.body.id]);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe('customer.updated');
    expect(events[0]!.request_id).toBe(updated.headers.get('request-id'));
    expect(events[0]!.data.object).toEqual(updated.body);
    expect(events[0]!.data.previous_attributes).toEqual({ last_name: null, name: 'Linus', metadata: { a: '1', b: '2' } });

    // A PATCH that changes nothing writes nothing and records no event.
    const same = await http(`/v3/customers/${created.body.id}`, { key, method: 'PATCH', body: { last_name: 'Torvalds' } });
    expect(same.body.updated_at).toBe(updated.body.updated_at);
    expect(await platform.sql('select 1 from events where customer_id = $1', [created.body.id])).toHaveLength(1);
  });

  it('applies concurrent PATCHes to one customer without losing any', async () => {
    const created = await create({ name: 'Concurrent' });
    await Promise.all(Array.from({ length: 10 }, (_, i) =>
      http(`/v3/customers/${created.body.id}`, { key, method: 'PATCH', body: { metadata: { [`k${i}`]: String(i) } } })));
    const read = await http(`/v3/customers/${created.body.id}`, { key });
    expect(Object.keys(read.body.metadata).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`).sort());
    expect(await platform.sql("select 1 from events where customer_id = $1 and type = 'customer.updated'", [created.body.id])).toHaveLength(10);
  });

  it('pages through 250 customers with no gap or duplicate while inserts happen', async () => {
    const pageKey = await platform.newKey({ accountId: await platform.newAccount() });
    const original: string[] = [];
    for (let i = 0; i < 250; i += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, (_, j) => create({ name: `Paged ${i + j}` }, pageKey)));
      original.push(...batch.map((r) => r.body.id));
    }
    const seen: string[] = [];
    let next = '/v3/customers?limit=37';
    let pages = 0;
    while (next) {
      const page = await http(next, { key: pageKey });
      expect(page.status).toBe(200);
      expect(page.body.object).toBe('list');
      seen.push(...page.body.data.map((c: { id: string }) => c.id));
      // Inserts between pages land before the cursor (newest first) and must not disturb it.
      await create({ name: `Inserted during page ${pages}` }, pageKey);
      const link = page.headers.get('link');
      if (page.body.has_more) {
        expect(link).toMatch(/^<\/v3\/customers\?limit=37&cursor=[\w-]+>; rel="next"$/);
        next = link!.slice(1, link!.indexOf('>'));
      } else {
        expect(link).toBeNull();
        next = '';
      }
      pages++;
    }
    expect(pages).toBe(7);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...original].sort().reverse());
  });

  it('pages oldest first with sort=created_at, and rejects a cursor from the other order', async () => {
    const k = await platform.newKey({ accountId: await platform.newAccount() });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await create({ name: `Sorted ${i}` }, k)).body.id);
    const first = await http('/v3/customers?sort=created_at&limit=3', { key: k });
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 3));
    const second = await http(`/v3/customers?sort=created_at&limit=3&cursor=${first.body.next_cursor}`, { key: k });
    expect(second.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(3));
    const mixed = await http(`/v3/customers?limit=3&cursor=${first.body.next_cursor}`, { key: k });
    expect(mixed.status).toBe(422);
    expect(mixed.body.errors[0].path).toBe('cursor');
  });

  it('filters by email, segment, customer_type and created range', async () => {
    const k = await platform.newKey({ accountId: await platform.newAccount() });
    const a = (await create({ email: 'a@example.com', segments: ['vip'], customer_type: 'b2b' }, k)).body;
    const b = (await create({ email: 'b@example.com', segments: ['eu', 'smb'], customer_type: 'b2c' }, k)).body;
    const c = (await create({ email: 'c@example.com', segments: [], customer_type: 'b2g' }, k)).body;
    const ids = async (q: string) => (await http(`/v3/customers?${q}`, { key: k })).body.data.map((x: { id: string }) => x.id);
    expect(await ids('email=A@example.com')).toEqual([a.id]);
    expect(await ids('email=a@example.com,c@example.com')).toEqual([c.id, a.id]);
    expect(await ids('segment=vip,smb')).toEqual([b.id, a.id]);
    expect(await ids('customer_type=b2g')).toEqual([c.id]);
    expect(await ids(`created_gte=${encodeURIComponent(b.created_at)}`)).toEqual([c.id, b.id]);
    expect(await ids(`created_lte=${encodeURIComponent(b.created_at)}`)).toEqual([b.id, a.id]);
    expect(await ids(`created_gte=${a.created_at.slice(0, 10)}&created_lte=${a.created_at.slice(0, 10)}`)).toEqual([c.id, b.id, a.id]);
    expect(await ids('created_gte=2000-01-01&created_lte=2000-12-31')).toEqual([]);
  });

  it('matches search text literally: %, _, quotes, backslashes and non-ASCII', async () => {
    const k = await platform.newKey({ accountId: await platform.newAccount() });
    const names = ['100% Natural', '100 Natural', 'snake_case Ltd', 'snakeXcase Ltd', "O'Reilly", 'Back\\slash', 'Zoë Müller', 'ZOË MÜLLER Corp'];
    const byName: Record<string, string> = {};
    for (const name of names) byName[name] = (await create({ name }, k)).body.id;
    const search = async (q: string) =>
      new Set((await http(`/v3/customers?q=${encodeURIComponent(q)}`, { key: k })).body.data.map((x: { id: string }) => x.id));
    expect(await search('100%')).toEqual(new Set([byName['100% Natural']]));
    expect(await search('e_c')).toEqual(new Set([byName['snake_case Ltd']]));
    expect(await search("O'Re")).toEqual(new Set([byName["O'Reilly"]]));
    expect(await search('k\\s')).toEqual(new Set([byName['Back\\slash']]));
    expect(await search('zoë müller')).toEqual(new Set([byName['Zoë Müller'], byName['ZOË MÜLLER Corp']]));
    expect(await search('%')).toEqual(new Set([byName['100% Natural']]));
  });
});
