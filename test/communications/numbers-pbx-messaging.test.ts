import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signInbound } from '../../domain/communications/messages.ts';
import { advance, newClock } from '../billing/support.ts';
import type { TestPlatform } from '../support/platform.ts';
import { useEnv, usePlatform, type Http } from '../support/use-platform.ts';
import { TO, provision, waitFor } from './support.ts';

useEnv({ COMMUNICATIONS_SANDBOX_SECOND_MS: '20' });

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ worker: true, env: { RATE_LIMIT_CONCURRENCY: '50', RATE_LIMIT_PER_MINUTE: '5000' } }, (t) => ({ platform, http, key } = t));

async function events(id: string): Promise<string[]> {
  return (await platform.sql<{ type: string }>(`select type from events where data->'object'->>'id' = $1 order by id`, [id])).map((r) => r.type);
}

describe('numbers', () => {
  it('provisions a local number in E.164 with its features and monthly cost; the same key gives the same number', async () => {
    const headers = { 'Idempotency-Key': randomUUID() };
    const res = await http('/v3/communications/numbers/provision', { key, headers, body: { number_type: 'local', area_code: '310', features: ['voice', 'sms'] } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      object: 'phone_number', number_type: 'local', area_code: '310', country: 'US', features: ['voice', 'sms'], monthly_cost: 115, currency: 'USD', status: 'active',
    });
    expect(res.body.number).toMatch(/^\+1310\d{7}$/);
    expect(res.body.inbound_secret).toMatch(/^whsec_/);
    const again = await http('/v3/communications/numbers/provision', { key, headers, body: { number_type: 'local', area_code: '310', features: ['voice', 'sms'] } });
    expect(again.body.id).toBe(res.body.id);
    const second = await provision(http, key, ['voice'], '310');
    expect(second.number).not.toBe(res.body.number);
    const read = await http(`/v3/communications/numbers/${res.body.id}`, { key });
    expect(read.body).toMatchObject({ number: res.body.number, inbound_secret: null });
  });

  it('no number left in an area code: 409 with nearby area codes', async () => {
    const res = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'local', area_code: '212', features: ['voice'] } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('no_numbers_available');
    expect(res.body.suggestions.map((s: any) => s.area_code)).toEqual(expect.arrayContaining(['646', '917']));
    expect(res.body.suggestion).toMatch(/646/);
    const search = await http('/v3/communications/numbers/available?area_code=212', { key });
    expect(search.body.data).toEqual([]);
  });

  it('international numbers need a country and the account\'s address; toll-free numbers need neither', async () => {
    const missing = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'international', features: ['voice'] } });
    expect(missing.status).toBe(422);
    expect(missing.body.errors[0].path).toBe('country');
    const noAddress = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'international', country: 'gb', features: ['voice'] } });
    expect(noAddress.status).toBe(422);
    expect(noAddress.body.code).toBe('regulatory_address_required');
    const address = await http('/v3/communications/address', { key, method: 'PUT', body: { name: 'Acme Ltd', line1: '1 High St', city: 'London', postal_code: 'SW1A 1AA', country: 'GB' } });
    expect(address.status, address.text).toBe(200);
    const gb = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'international', country: 'GB', features: ['voice', 'fax'] } });
    expect(gb.status, gb.text).toBe(201);
    expect(gb.body).toMatchObject({ country: 'GB', number_type: 'international', monthly_cost: 400 });
    expect(gb.body.number).toMatch(/^\+44/);
    const tollFree = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'toll_free', features: ['voice'] } });
    expect(tollFree.status).toBe(201);
    expect(tollFree.body.number).toMatch(/^\+18(00|33|44)/);
  });

  it('refuses bad provisioning input naming the fields', async () => {
    const res = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'local', features: ['telepathy'], area_code: '0123' } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: any) => e.path).sort()).toEqual(['area_code', 'features.0']);
    const noArea = await http('/v3/communications/numbers/provision', { key, body: { number_type: 'local', features: ['sms'] } });
    expect(noArea.status).toBe(422);
    expect(noArea.body.errors).toEqual([{ path: 'area_code', message: expect.stringMatching(/area_code/) }]);
  });

  it('searches available numbers, lists, and releases (twice is a 409); a released number is offered again', async () => {
    const before = await http('/v3/communications/numbers/available?number_type=local&area_code=415&limit=100', { key });
    expect(before.status).toBe(200);
    const n = await provision(http, key, ['sms'], '415');
    const after = await http('/v3/communications/numbers/available?number_type=local&area_code=415&limit=100', { key });
    expect(after.body.data.map((a: any) => a.number)).not.toContain(n.number);
    expect(after.body.data.length).toBe(before.body.data.length - 1);
    const released = await http(`/v3/communications/numbers/${n.id}`, { key, method: 'DELETE' });
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ status: 'released' });
    expect(released.body.released_at).not.toBeNull();
    const twice = await http(`/v3/communications/numbers/${n.id}`, { key, method: 'DELETE' });
    expect(twice.status).toBe(409);
    expect(twice.body.current_state).toBe('released');
    const offered = await http('/v3/communications/numbers/available?number_type=local&area_code=415&limit=100', { key });
    expect(offered.body.data.map((a: any) => a.number)).toContain(n.number);
    const list = await http('/v3/communications/numbers?status=released', { key });
    expect(list.body.data.map((x: any) => x.id)).toEqual([n.id]);
  });
});

describe('PBX extensions', () => {
  it('creates a PBX and extensions; the listing is in extension order with total_count, paginated', async () => {
    const pbx = await http('/v3/communications/pbx', { key, body: { name: 'HQ' } });
    expect(pbx.status).toBe(201);
    const id = pbx.body.id;
    for (const ext of ['1000', '101', '999', '102']) {
      const res = await http(`/v3/communications/pbx/${id}/extensions`, { key, body: { extension: ext, user_id: `user_${ext}` } });
      expect(res.status, res.text).toBe(201);
    }
    const fwd = await http(`/v3/communications/pbx/${id}/extensions`, {
      key, body: { extension: '200', status: 'dnd', forwarding: { enabled: true, destination: '+44 20 7183 8750' }, voicemail: { enabled: true, greeting: 'Leave a message' } },
    });
    expect(fwd.body).toMatchObject({ status: 'dnd', forwarding: { enabled: true, destination: '+442071838750' }, voicemail: { enabled: true, greeting: 'Leave a message' } });

    const first = await http(`/v3/communications/pbx/${id}/extensions?limit=3`, { key });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'pbx_extension_list', total_count: 5, has_more: true });
    expect(first.body.extensions.map((e: any) => e.extension)).toEqual(['101', '102', '200']);
    expect(first.body.extensions[0]).toMatchObject({ user_id: 'user_101', status: 'available', forwarding: { enabled: false, destination: null }, voicemail: { enabled: false, greeting: null } });
    const second = await http(`/v3/communications/pbx/${id}/extensions?limit=3&cursor=${first.body.next_cursor}`, { key });
    expect(second.body.extensions.map((e: any) => e.extension)).toEqual(['999', '1000']);
    expect(second.body).toMatchObject({ has_more: false, next_cursor: null, total_count: 5 });
    expect((await http(`/v3/communications/pbx/${id}`, { key })).body.extension_count).toBe(5);
  });

  it('extension numbers are unique per PBX and 3–6 digits; forwarding needs an E.164 destination; update and delete', async () => {
    const id = (await http('/v3/communications/pbx', { key, body: { name: 'Branch' } })).body.id;
    const ext = (await http(`/v3/communications/pbx/${id}/extensions`, { key, body: { extension: '300' } })).body;
    const dup = await http(`/v3/communications/pbx/${id}/extensions`, { key, body: { extension: '300' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('extension_taken');
    const bad = await http(`/v3/communications/pbx/${id}/extensions`, { key, body: { extension: '12', forwarding: { enabled: true, destination: '020 7183 8750' } } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: any) => e.path).sort()).toEqual(['extension', 'forwarding.destination']);
    const noDest = await http(`/v3/communications/pbx/${id}/extensions/${ext.id}`, { key, method: 'PATCH', body: { forwarding: { enabled: true } } });
    expect(noDest.status).toBe(422);
    expect(noDest.body.errors[0].path).toBe('forwarding.destination');
    const patched = await http(`/v3/communications/pbx/${id}/extensions/${ext.id}`, {
      key, method: 'PATCH', body: { status: 'offline', forwarding: { enabled: true, destination: '+14155550123' } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'offline', forwarding: { enabled: true, destination: '+14155550123' } });
    const deleted = await http(`/v3/communications/pbx/${id}/extensions/${ext.id}`, { key, method: 'DELETE' });
    expect(deleted.body).toEqual({ id: ext.id, object: 'pbx_extension', deleted: true });
    expect((await http(`/v3/communications/pbx/${id}/extensions/${ext.id}`, { key })).status).toBe(404);
    expect((await http(`/v3/communications/pbx/pbx_nope/extensions`, { key })).status).toBe(404);
    expect((await http(`/v3/communications/pbx/${id}/extensions?cursor=bogus`, { key })).status).toBe(422);
  });
});

describe('messaging apps', () => {
  let sender: { id: string; number: string; inbound_secret: string };
  const send = (app: string, body: Record<string, unknown>) => http(`/v3/communications/${app}/send`, { key, body: { from: sender.number, ...body } });
  const inbound = (app: string, body: Record<string, unknown>, secret = sender.inbound_secret, timestamp = Math.floor(Date.now() / 1000)) => {
    const raw = JSON.stringify({ to: sender.number, ...body });
    const id = `msg_${randomUUID()}`;
    return http(`/v3/communications/${app}/inbound`, {
      key, rawBody: raw,
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signInbound(secret, id, timestamp, raw) },
    });
  };

  it('sends an SMS: accepted, then sent, delivered and read, with message.delivered', async () => {
    sender = await provision(http, key, ['sms'], '628');
    const res = await send('sms', { to: '+14155550123', text: 'Your code is 123456' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ object: 'message', app: 'sms', status: 'accepted', to: TO.answered, text: 'Your code is 123456' });
    expect(res.body.workflow_id).toBe(`message-${res.body.id}`);
    const read = await waitFor(http, key, `/v3/communications/messages/${res.body.id}`, (m) => m.status === 'read');
    expect(read.delivered_at).not.toBeNull();
    expect(read.read_at).not.toBeNull();
    expect(await events(res.body.id)).toEqual(['message.delivered']);
  });

  it('an undeliverable recipient fails with message.failed', async () => {
    const res = await send('sms', { to: '+15005550003', text: 'Hello' });
    const failed = await waitFor(http, key, `/v3/communications/messages/${res.body.id}`, (m) => m.status === 'failed');
    expect(failed.failure).toMatchObject({ code: 'undeliverable' });
    expect(await events(res.body.id)).toEqual(['message.failed']);
  });

  it('unknown app: 404 listing the apps; bad input names the fields; the sender must be provisioned', async () => {
    const unknown = await send('telegram', { to: '+14155550123', text: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'messaging_app_not_found', messaging_apps: ['whatsapp', 'sms', 'messenger'] });
    const neither = await send('sms', { to: '+14155550123' });
    expect(neither.status).toBe(422);
    expect(neither.body.errors[0].path).toBe('text');
    const badTo = await send('whatsapp', { to: '4155550123', text: 'x' });
    expect(badTo.status).toBe(422);
    expect(badTo.body.errors[0].path).toBe('to');
    const notOurs = await http('/v3/communications/sms/send', { key, body: { from: '+14155550177', to: '+14155550123', text: 'x' } });
    expect(notOurs.status).toBe(422);
    expect(notOurs.body.errors[0].path).toBe('from');
    const insecure = await send('sms', { to: '+14155550123', text: 'x', media_url: 'http://example.com/a.png' });
    expect(insecure.status).toBe(422);
    expect(insecure.body.errors[0].path).toBe('media_url');
  });

  it('WhatsApp: free text only within 24 h of the recipient\'s last (signed) message, checked with a test clock; templates always', async () => {
    const customer = '+14155550142';
    const outside = await send('whatsapp', { to: customer, text: 'Hi there' });
    expect(outside.status).toBe(422);
    expect(outside.body).toMatchObject({ code: 'outside_service_window', errors: [{ path: 'text' }] });
    const template = await send('whatsapp', { to: customer, template: { name: 'order_update', language: 'en_US', variables: ['A-1'] } });
    expect(template.status, template.text).toBe(201);
    expect(template.body.template).toEqual({ name: 'order_update', language: 'en_US', variables: ['A-1'] });

    // Signatures: missing, wrong secret, too old → 401; nothing recorded.
    const unsigned = await http('/v3/communications/whatsapp/inbound', { key, body: { from: customer, to: sender.number, text: 'x' } });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.code).toBe('signature_invalid');
    expect((await inbound('whatsapp', { from: customer, text: 'x' }, 'whsec_' + Buffer.alloc(24, 1).toString('base64'))).status).toBe(401);
    expect((await inbound('whatsapp', { from: customer, text: 'x' }, sender.inbound_secret, Math.floor(Date.now() / 1000) - 3600)).status).toBe(401);
    expect((await send('whatsapp', { to: customer, text: 'still closed' })).status).toBe(422);

    const clock = await newClock(http, key, new Date().toISOString());
    const got = await inbound('whatsapp', { from: customer, text: 'Where is my order?', test_clock: clock });
    expect(got.status, got.text).toBe(201);
    expect(got.body).toMatchObject({ object: 'inbound_message', from: customer, to: sender.number });
    expect(Date.parse(got.body.service_window_ends_at) - Date.parse(got.body.received_at)).toBe(24 * 3600 * 1000);
    const inside = await send('whatsapp', { to: customer, text: 'It ships today', test_clock: clock });
    expect(inside.status, inside.text).toBe(201);

    await advance(http, key, clock, new Date(Date.now() + 25 * 3600 * 1000).toISOString());
    const closed = await send('whatsapp', { to: customer, text: 'Anything else?', test_clock: clock });
    expect(closed.status).toBe(422);
    expect(closed.body.code).toBe('outside_service_window');
    expect((await send('whatsapp', { to: customer, template: { name: 'follow_up', language: 'en' }, test_clock: clock })).status).toBe(201);
    // SMS has no window.
    expect((await send('sms', { to: customer, text: 'SMS is fine', test_clock: clock })).status).toBe(201);
    const unknownClock = await send('whatsapp', { to: customer, text: 'x', test_clock: 'clock_nope' });
    expect(unknownClock.status).toBe(422);
    expect(unknownClock.body.errors[0].path).toBe('test_clock');
  });

  it('Messenger recipients are page-scoped ids; the same Idempotency-Key sends once', async () => {
    const bad = await send('messenger', { to: '+14155550123', template: { name: 'hello', language: 'en' } });
    expect(bad.status).toBe(422);
    const headers = { 'Idempotency-Key': randomUUID() };
    const body = { from: sender.number, to: '1234567890123', template: { name: 'hello', language: 'en' } };
    const first = await http('/v3/communications/messenger/send', { key, headers, body });
    const second = await http('/v3/communications/messenger/send', { key, headers, body });
    expect(first.status, first.text).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    const count = await platform.sql<{ n: string }>('select count(*) as n from comm_messages where request_idempotency_key = $1', [headers['Idempotency-Key']]);
    expect(count[0]!.n).toBe('1');
  });
});
