import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

usePlatform({ env: { RATE_LIMIT_CONCURRENCY: '50' } }, (t) => ({ platform, http, key } = t));

describe('idempotency keys', () => {
  it('replays the first response byte for byte, marked Idempotent-Replayed', async () => {
    const headers = { 'idempotency-key': 'replay-1' };
    const first = await http('/v3/customers', { key, headers, body: { email: 'ada@example.com', name: 'Ada' } });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await http('/v3/customers', { key, headers, body: { email: 'ada@example.com', name: 'Ada' } });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await platform.sql("select id from customers where email = 'ada@example.com'")).toHaveLength(1);
  });

  it('a replayed 4xx keeps its original request_id, and the Request-Id header equals it', async () => {
    const headers = { 'idempotency-key': 'replay-4xx' };
    const body = { email: 'not-an-email' };
    const first = await http('/v3/customers', { key, headers, body });
    expect(first.status).toBe(422);
    const originalId = first.headers.get('request-id');
    expect(first.body.request_id).toBe(originalId);
    const again = await http('/v3/customers', { key, headers, body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.body.request_id).toBe(originalId);
    expect(again.headers.get('request-id')).toBe(originalId);
  });

  it('refuses the same key with a different body: 422 idempotency_key_reused', async () => {
    const headers = { 'idempotency-key': 'reuse-1' };
    expect((await http('/v3/customers', { key, headers, body: { name: 'One' } })).status).toBe(201);
    const other = await http('/v3/customers', { key, headers, body: { name: 'Two' } });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
  });

  it('keys are per account and mode: the same key text in another mode is a new request', async () => {
    const live = await platform.newKey({ type: 'live' });
    const headers = { 'idempotency-key': 'mode-1' };
    const a = await http('/v3/customers', { key, headers, body: { name: 'Test mode' } });
    const b = await http('/v3/customers', { key: live, headers, body: { name: 'Test mode' } });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('runs ten concurrent requests with one key exactly once', async () => {
    const headers = { 'idempotency-key': 'concurrent-1' };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => http('/v3/customers', { key, headers, body: { email: 'once@example.com' } })),
    );
    const created = results.filter((r) => r.status === 201);
    const inUse = results.filter((r) => r.status === 409);
    expect(created.length + inUse.length).toBe(10);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of inUse) expect(r.body.code).toBe('idempotency_key_in_use');
    // Every 201 is the one original response (the others replays of it).
    expect(new Set(created.map((r) => r.text)).size).toBe(1);
    expect(await platform.sql("select id from customers where email = 'once@example.com'")).toHaveLength(1);
    const replay = await http('/v3/customers', { key, headers, body: { email: 'once@example.com' } });
    expect(replay.text).toBe(created[0]!.text);
  });

  it('stores error answers too, and rejects an over-long key', async () => {
    const headers = { 'idempotency-key': 'invalid-1' };
    const first = await http('/v3/customers', { key, headers, body: { email: 'nope' } });
    expect(first.status).toBe(422);
    const again = await http('/v3/customers', { key, headers, body: { email: 'nope' } });
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const long = await http('/v3/customers', { key, headers: { 'idempotency-key': 'k'.repeat(256) }, body: { name: 'x' } });
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('idempotency_key_invalid');
  });
});
