import { beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } }, (t) => ({ platform, http, key } = t));

const SECRET_24 = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

describe('webhook endpoints', () => {
  it('creates an endpoint, generating a whsec_ secret shown only once', async () => {
    const res = await http('/v3/webhooks', {
      key, body: { url: 'https://hooks.example.com/in', events: ['payment.succeeded', 'order.fulfilled'], metadata: { team: 'ops' }, description: 'Ops' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v3/webhooks/${res.body.id}`);
    expect(res.body).toMatchObject({
      object: 'webhook_endpoint', livemode: false, url: 'https://hooks.example.com/in', events: ['payment.succeeded', 'order.fulfilled'],
      enabled: true, status: 'enabled', metadata: { team: 'ops' }, description: 'Ops',
    });
    expect(res.body.id).toMatch(/^whk_/);
    const bytes = Buffer.from(res.body.secret.slice('whsec_'.length), 'base64');
    expect(res.body.secret.startsWith('whsec_')).toBe(true);
    expect(bytes.length).toBeGreaterThanOrEqual(24);
    expect(bytes.length).toBeLessThanOrEqual(64);

    const got = await http(`/v3/webhooks/${res.body.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    expect(got.text).not.toContain(res.body.secret.slice(6));
    const listed = await http('/v3/webhooks', { key });
    expect(listed.text).not.toContain(res.body.secret.slice(6));
  });

  it('accepts a caller-chosen secret and rejects malformed ones, naming every bad field', async () => {
    const ok = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: ['*'], secret: SECRET_24 } });
    expect(ok.status).toBe(201);
    expect(ok.body.secret).toBe(SECRET_24);

    const tooShort = `whsec_${Buffer.alloc(16).toString('base64')}`;
    const bad = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: ['payment.succeded', 'nope'], secret: tooShort } });
    expect(bad.status).toBe(422);
    const byPath = Object.fromEntries(bad.body.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
    expect(Object.keys(byPath).sort()).toEqual(['events.0', 'events.1', 'secret']);
    expect(byPath['events.0']).toContain("did you mean 'payment.succeeded'");
    expect(byPath.secret).toContain('24–64');

    const noPrefix = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: ['*'], secret: 'hunter2' } });
    expect(noPrefix.status).toBe(422);
    expect(noPrefix.body.errors[0].message).toContain('whsec_');
  });

  it('validates events against the catalog, and folds "*" to subscribe to everything', async () => {
    const empty = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: [] } });
    expect(empty.status).toBe(422);
    const all = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: ['order.created', '*'] } });
    expect(all.status).toBe(201);
    expect(all.body.events).toEqual(['*']);
  });

  it('updates, disables, re-enables and deletes an endpoint', async () => {
    const created = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/a', events: ['order.created'], metadata: { a: '1', b: '2' } } });
    const id = created.body.id;
    const patched = await http(`/v3/webhooks/${id}`, {
      key, method: 'PATCH', body: { url: 'https://hooks.example.com/b', events: ['order.created', 'inventory.low_stock'], enabled: false, metadata: { a: null, c: '3' } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      url: 'https://hooks.example.com/b', events: ['order.created', 'inventory.low_stock'], enabled: false, status: 'disabled', metadata: { b: '2', c: '3' },
    });
    const filtered = await http('/v3/webhooks?enabled=false', { key });
    expect(filtered.body.data.map((e: { id: string }) => e.id)).toContain(id);
    expect(filtered.body.data.every((e: { enabled: boolean }) => !e.enabled)).toBe(true);

    const enabled = await http(`/v3/webhooks/${id}`, { key, method: 'PATCH', body: { enabled: true } });
    expect(enabled.body.status).toBe('enabled');

    const deleted = await http(`/v3/webhooks/${id}`, { key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'webhook_endpoint', deleted: true });
    expect((await http(`/v3/webhooks/${id}`, { key })).status).toBe(404);
    expect((await http(`/v3/webhooks/${id}/deliveries`, { key })).status).toBe(404);
  });

  it('rotates the secret: a new one shown once, the old one signing too for 24 hours', async () => {
    const created = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/r', events: ['*'] } });
    const before = Date.now();
    const rotated = await http(`/v3/webhooks/${created.body.id}/rotate-secret`, { key, method: 'POST' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const overlapEnds = Date.parse(rotated.body.previous_secret_expires_at);
    expect(overlapEnds - before).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(overlapEnds - before).toBeLessThan(24 * 3600_000 + 60_000);
    const chosen = await http(`/v3/webhooks/${created.body.id}/rotate-secret`, { key, body: { secret: SECRET_24 } });
    expect(chosen.body.secret).toBe(SECRET_24);
    const [row] = await platform.sql<{ secret: string; previous_secret: string }>('select secret, previous_secret from webhook_endpoints where id = $1', [created.body.id]);
    expect(row).toEqual({ secret: SECRET_24, previous_secret: rotated.body.secret });
  });

  it('pages the endpoint list with a cursor', async () => {
    const other = await platform.newKey({ accountId: await platform.newAccount() });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await http('/v3/webhooks', { key: other, body: { url: `https://hooks.example.com/${i}`, events: ['*'] } })).body.id);
    const first = await http('/v3/webhooks?limit=2', { key: other });
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3]]);
    expect(first.body.has_more).toBe(true);
    expect(first.headers.get('link')).toContain('rel="next"');
    const second = await http(`/v3/webhooks?limit=2&cursor=${first.body.next_cursor}`, { key: other });
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
  });
});

describe('webhook permissions and scoping', () => {
  it('needs webhooks:write to change endpoints and webhooks:read to read them and events', async () => {
    const reader = await platform.newKey({ type: 'restricted', permissions: ['webhooks:read'] });
    const crm = await platform.newKey({ type: 'restricted', permissions: ['crm:write'] });
    expect((await http('/v3/webhooks', { key: reader })).status).toBe(200);
    expect((await http('/v3/events', { key: reader })).status).toBe(200);
    const denied = await http('/v3/webhooks', { key: reader, body: { url: 'https://hooks.example.com/x', events: ['*'] } });
    expect(denied.status).toBe(403);
    expect(denied.body.required_permission).toBe('webhooks:write');
    const noRead = await http('/v3/events', { key: crm });
    expect(noRead.status).toBe(403);
    expect(noRead.body.required_permission).toBe('webhooks:read');
  });

  it("hides another account's endpoints and events behind 404", async () => {
    const created = await http('/v3/webhooks', { key, body: { url: 'https://hooks.example.com/mine', events: ['*'] } });
    const stranger = await platform.newKey({ accountId: await platform.newAccount() });
    expect((await http(`/v3/webhooks/${created.body.id}`, { key: stranger })).status).toBe(404);
    expect((await http(`/v3/webhooks/${created.body.id}`, { key: stranger, method: 'PATCH', body: { enabled: false } })).status).toBe(404);
    expect((await http(`/v3/webhooks/${created.body.id}/rotate-secret`, { key: stranger, method: 'POST' })).status).toBe(404);
    expect((await http(`/v3/webhooks/${created.body.id}`, { key: stranger, method: 'DELETE' })).status).toBe(404);
    const live = await platform.newKey({ type: 'live' });
    expect((await http(`/v3/webhooks/${created.body.id}`, { key: live })).status).toBe(404);
  });
});

describe('the SSRF guard when an endpoint is created', () => {
  let live: string;
  beforeAll(async () => {
    live = await platform.newKey({ type: 'live' });
  });

  it.each([
    ['https://127.0.0.1/hooks', 'loopback'],
    ['https://169.254.169.254/latest/meta-data/', 'link-local'],
    ['https://localhost:8443/hooks', 'loopback'],
    ['https://10.1.2.3/hooks', 'private-network'],
    ['https://[::1]/hooks', 'loopback'],
    ['https://[::ffff:127.0.0.1]/hooks', 'loopback'],
    ['http://hooks.example.com/in', 'https'],
  ])('refuses %s in live mode', async (url, why) => {
    const res = await http('/v3/webhooks', { key: live, body: { url, events: ['*'] } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('webhook_url_forbidden');
    expect(res.body.errors[0].path).toBe('url');
    expect(res.body.detail).toContain(why);
  });

  it('accepts a public https URL in live mode, and loopback http in test mode on this server (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)', async () => {
    expect((await http('/v3/webhooks', { key: live, body: { url: 'https://93.184.215.14/hooks', events: ['*'] } })).status).toBe(201);
    expect((await http('/v3/webhooks', { key, body: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } })).status).toBe(201);
    // Link-local stays refused in test mode too.
    expect((await http('/v3/webhooks', { key, body: { url: 'http://169.254.169.254/', events: ['*'] } })).status).toBe(422);
  });

  it('refuses URLs with credentials and non-http schemes', async () => {
    expect((await http('/v3/webhooks', { key, body: { url: 'https://user:pw@hooks.example.com/', events: ['*'] } })).status).toBe(422);
    expect((await http('/v3/webhooks', { key, body: { url: 'ftp://hooks.example.com/', events: ['*'] } })).status).toBe(422);
  });
});

describe('events for debugging', () => {
  it('lists events newest first with type and customer filters, and retrieves one', async () => {
    const cus = await http('/v3/customers', { key, body: { email: 'events@example.com', name: 'Eve' } });
    for (const name of ['Eve 2', 'Eve 3']) {
      expect((await http(`/v3/customers/${cus.body.id}`, { key, method: 'PATCH', body: { name } })).status).toBe(200);
    }
    const listed = await http(`/v3/events?type=customer.*&customer_id=${cus.body.id}`, { key });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(2);
    expect(listed.body.data[0]).toMatchObject({ object: 'event', type: 'customer.updated', customer_id: cus.body.id, data: { object: { name: 'Eve 3' } } });
    expect(listed.body.data[0].request_id).toMatch(/^req_/);
    expect(listed.body.data[0].id > listed.body.data[1].id).toBe(true);
    const none = await http('/v3/events?type=order.created', { key });
    expect(none.body.data.every((e: { type: string }) => e.type === 'order.created')).toBe(true);
    const one = await http(`/v3/events/${listed.body.data[1].id}`, { key });
    expect(one.body).toMatchObject({ id: listed.body.data[1].id, data: { object: { name: 'Eve 2' }, previous_attributes: { name: 'Eve' } } });
    expect((await http('/v3/events/evt_01jpa7m4x0f3qv8r2k6n9t5w1c', { key })).status).toBe(404);
    const stranger = await platform.newKey({ accountId: await platform.newAccount() });
    expect((await http(`/v3/events/${one.body.id}`, { key: stranger })).status).toBe(404);
  });
});
