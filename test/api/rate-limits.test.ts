import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hashKey } from '../../domain/accounts/keys.ts';
import { v3Routes } from '../../domain/registry.ts';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;

usePlatform({}, (t) => ({ platform, http } = t));

/**
 * Fixed one-minute windows: a burst must not straddle two. Instead of waiting for the next minute,
 * the clock the windows are counted on (the database's, shifted) is set to read just after a
 * minute boundary now, leaving the burst almost a whole minute.
 */
async function freshMinute(): Promise<void> {
  const [row] = await platform.sql<{ ms: string }>('select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms');
  platform.rateLimitClock.offsetMs = 60_000 - (Number(row!.ms) % 60_000) + 200;
}

describe('rate limits', () => {
  it('refuses the 101st request in a minute with 429 and Retry-After, counting down on the way', async () => {
    const key = await platform.newKey();
    await freshMinute();
    const remaining: number[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await http('/v3/customers?limit=1', { key });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('100');
      remaining.push(Number(res.headers.get('x-ratelimit-remaining')));
    }
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    const reset = Number((await http('/v3/customers?limit=1', { key })).headers.get('x-ratelimit-reset'));

    const limited = await http('/v3/customers?limit=1', { key });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(limited.body.detail).toContain('minute');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBe(reset);
    expect(reset % 60).toBe(0);
    expect(Math.abs(reset - Math.floor((Date.now() + platform.rateLimitClock.offsetMs) / 1000) - retryAfter)).toBeLessThanOrEqual(1);
    expect(limited.headers.get('ratelimit-policy')).toBe('"minute";q=100;w=60, "day";q=10000;w=86400, "concurrency";q=10');
    expect(limited.headers.get('ratelimit')).toMatch(/^"minute";r=0;t=\d+, "day";r=9898;t=\d+, "concurrency";r=\d+$/);
  });

  it('holds the limit across two API processes on one database: 100 a minute, not 200', async () => {
    const key = await platform.newKey();
    const second = await platform.startSecondApi();
    const http2 = client(second.url);
    await freshMinute();
    // Batches of 8 alternate between the processes, staying under the concurrency limit of 10,
    // so only the minute limit can refuse a request.
    const statuses: number[] = [];
    for (let batch = 0; batch < 15; batch++) {
      statuses.push(...(await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? http2 : http)('/v3/customers?limit=1', { key }).then((r) => r.status)),
      )));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    const after = await http('/v3/customers?limit=1', { key });
    expect(after.status).toBe(429);
    expect(after.body.code).toBe('rate_limited');
  });

  it('gives premium accounts 5,000 a minute', async () => {
    const key = await platform.newKey({ accountId: await platform.newAccount('premium') });
    await freshMinute();
    for (let i = 0; i < 120; i++) {
      const res = await http('/v3/customers?limit=1', { key });
      expect(res.status, `request ${i + 1}: ${res.text}`).toBe(200);
    }
    const res = await http('/v3/customers?limit=1', { key });
    expect(res.headers.get('x-ratelimit-limit')).toBe('5000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe(String(5000 - 121));
  });

  it('refuses the 11th concurrent request with concurrency_limited', async () => {
    const key = await platform.newKey();
    // A read the process has admitted before (its context remembered, so it overlaps its admission).
    const customer = (await http('/v3/customers', { key, body: { name: 'Read Me' } })).body as { id: string };
    expect((await http(`/v3/customers/${customer.id}`, { key })).status).toBe(200);
    const url = new URL(platform.url);
    const body = JSON.stringify({ name: 'Slow Sender' });
    // Ten requests whose bodies are still arriving: each holds its slot.
    const pending = Array.from({ length: 10 }, () => {
      const req = request({
        host: url.hostname, port: url.port, path: '/v3/customers', method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      const done = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => { res.resume(); resolve(res.statusCode!); });
        req.on('error', reject);
      });
      req.write(body.slice(0, 5));
      return { req, done };
    });
    // This key's slots only: other tests' keys (or a dead instance's rows) must not count.
    const inFlight = async () => Number((await platform.sql<{ n: string }>(
      `select coalesce(sum(c.in_flight), 0) as n from concurrency_counters c join api_keys k on k.id = c.api_key_id where k.key_hash = $1`,
      [hashKey(key)]))[0]!.n);
    for (let i = 0; (await inFlight()) !== 10; i++) {
      if (i > 100) throw new Error(`the ten slow requests hold ${await inFlight()} slots`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const eleventh = await http('/v3/customers', { key });
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.code).toBe('concurrency_limited');
    expect(eleventh.headers.get('retry-after')).toBe('1');
    const read = await http(`/v3/customers/${customer.id}`, { key });
    expect([read.status, read.body.code]).toEqual([429, 'concurrency_limited']);
    expect(read.body.name).toBeUndefined();

    for (const p of pending) p.req.end(body.slice(5));
    expect(await Promise.all(pending.map((p) => p.done))).toEqual(Array(10).fill(201));
    // Slots are released once responses are done.
    for (let i = 0; (await inFlight()) !== 0; i++) {
      if (i > 50) throw new Error(`${await inFlight()} slots still held after the responses`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const after = await http('/v3/customers', { key, body: { name: 'After' } });
    expect([after.status, after.body.name]).toEqual([201, 'After']);
  });

  it('admits one batch exactly as if its requests came one after another', async () => {
    const key = await platform.newKey();
    const other = await platform.newKey();
    const revoked = await platform.newKey();
    await platform.sql(`update api_keys set status = 'revoked' where key_hash = $1`, [hashKey(revoked)]);
    const [k, o, r] = [key, other, revoked].map(hashKey) as [string, string, string];
    const unknown = hashKey('bp_test_' + 'x'.repeat(40));
    // Limits of the call: 3 a minute, 10,000 a day, 2 at once.
    const rows = await platform.sql<{ ord: number; outcome: string; minute_count: number | null; in_flight: number | null }>(
      `select ord, outcome, minute_count, in_flight from bp_admit_batch($1, 'batch-test', 3, 5000, 10000, 2, 30) order by ord`,
      [[k, unknown, k, o, r, k, k]],
    );
    expect(rows.map((row) => [row.ord, row.outcome, row.minute_count, row.in_flight])).toEqual([
      [1, 'admitted', 1, 1],
      [2, 'unknown', null, null],
      [3, 'admitted', 2, 2],
      [4, 'admitted', 1, 1],
      [5, 'revoked', null, null],
      [6, 'concurrency_limited', 3, 2],
      [7, 'minute_limited', 4, 2],
    ]);
    const counters = await platform.sql<{ in_flight: number }>(
      `select in_flight from concurrency_counters c join api_keys ak on ak.id = c.api_key_id
        where c.instance_id = 'batch-test' order by ak.key_hash = $1 desc`, [k]);
    expect(counters.map((c) => c.in_flight)).toEqual([2, 1]);
  });

  it('counts instant reads in the windows and against the free slots, without taking a slot', async () => {
    const key = await platform.newKey();
    const k = hashKey(key);
    // Limits of the call: 100 a minute, 10,000 a day, 2 at once; the 1st and 3rd are instant reads.
    const rows = await platform.sql<{ ord: number; outcome: string; minute_count: number }>(
      `select ord, outcome, minute_count from bp_admit_batch($1, 'instant-test', 100, 5000, 10000, 2, 30, 0, $2) order by ord`,
      [[k, k, k], [true, false, true]],
    );
    expect(rows.map((row) => [row.ord, row.outcome, row.minute_count])).toEqual([
      [1, 'admitted', 1], [2, 'admitted', 2], [3, 'concurrency_limited', 3],
    ]);
    const held = await platform.sql<{ in_flight: number }>(`select in_flight from concurrency_counters where instance_id = 'instant-test'`);
    expect(held.map((c) => c.in_flight)).toEqual([1]);
    // Only instant reads: the windows count them, no counter row is written.
    await platform.sql(`select * from bp_admit_batch($1, 'instant-only', 100, 5000, 10000, 2, 30, 0, $2)`, [[k], [true]]);
    expect(await platform.sql(`select 1 from concurrency_counters where instance_id = 'instant-only'`)).toEqual([]);
  });

  it('refuses a read of a key it admitted a moment ago once the key is revoked or expired', async () => {
    const key = await platform.newKey();
    const customer = (await http('/v3/customers', { key, body: { name: 'Remembered' } })).body as { id: string };
    for (let i = 0; i < 3; i++) expect((await http(`/v3/customers/${customer.id}`, { key })).status).toBe(200);
    await platform.sql(`update api_keys set status = 'revoked' where key_hash = $1`, [hashKey(key)]);
    const revoked = await http(`/v3/customers/${customer.id}`, { key });
    expect([revoked.status, revoked.body.code, revoked.body.name]).toEqual([401, 'api_key_revoked', undefined]);

    const other = await platform.newKey();
    const mine = (await http('/v3/customers', { key: other, body: { name: 'Expiring' } })).body as { id: string };
    expect((await http(`/v3/customers/${mine.id}`, { key: other })).status).toBe(200);
    await platform.sql(`update api_keys set expires_at = clock_timestamp() - interval '1 second' where key_hash = $1`, [hashKey(other)]);
    const expired = await http(`/v3/customers/${mine.id}`, { key: other });
    expect([expired.status, expired.body.code]).toEqual([401, 'api_key_expired']);
  });

  it('judges every read marked readOnly by its admission: a key revoked after its context was remembered gets 401', async () => {
    const readOnly = v3Routes.filter((r) => r.readOnly);
    expect(readOnly.length).toBeGreaterThanOrEqual(9);
    for (const route of readOnly) {
      const path = route.path.replace(/\{[a-z_]+\}/g, 'missing_0');
      const key = await platform.newKey();
      // Admitted, its context remembered: the read's own error (no such record, or a malformed id).
      const first = await http(path, { key });
      expect([404, 422], `${route.path}: ${first.text}`).toContain(first.status);
      // Hostile ids on the same fast path: a NUL byte and an oversized id are 422 validation_failed naming the parameter.
      const param = /\{([a-z_]+)\}[^{]*$/.exec(route.path)![1]!;
      for (const bad of ['bad%00id', 'x'.repeat(5_000)]) {
        const res = await http(route.path.replace(/\{[a-z_]+\}/g, (m) => (m === `{${param}}` ? bad : 'missing_0')), { key });
        expect([res.status, res.body.code], `${route.path} with ${bad.slice(0, 10)}`).toEqual([422, 'validation_failed']);
        expect(JSON.stringify(res.body.errors), route.path).toContain(param);
      }
      await platform.sql(`update api_keys set status = 'revoked' where key_hash = $1`, [hashKey(key)]);
      const revoked = await http(path, { key });
      expect([revoked.status, revoked.body.code], route.path).toEqual([401, 'api_key_revoked']);
    }
  });

  it('answers a read\'s own error (404) only once the key is admitted, and a limit before it', async () => {
    const key = await platform.newKey();
    await freshMinute();
    expect((await http('/v3/customers/cus_missing', { key })).status).toBe(404);
    for (let i = 0; i < 99; i++) expect((await http('/v3/customers/cus_missing', { key })).body.code).toBe('not_found');
    const limited = await http('/v3/customers/cus_missing', { key });
    expect([limited.status, limited.body.code]).toEqual([429, 'rate_limited']);
  });

  it('stops counting the requests of an instance that died (stale heartbeat)', async () => {
    const key = await platform.newKey();
    const [{ id }] = (await platform.sql<{ id: string }>('select id from api_keys where key_hash = $1', [hashKey(key)])) as [{ id: string }];
    // An instance that crashed with ten requests in flight: its counter row stops being refreshed.
    await platform.sql(`insert into concurrency_counters values ($1, 'dead-instance', 10, clock_timestamp())`, [id]);
    expect((await http('/v3/customers', { key })).body.code).toBe('concurrency_limited');
    await platform.sql(`update concurrency_counters set heartbeat_at = clock_timestamp() - interval '31 seconds' where instance_id = 'dead-instance'`);
    const admitted = await http('/v3/customers', { key });
    expect([admitted.status, admitted.body.object]).toEqual([200, 'list']);
  });

  it('admits concurrent bursts on one key across two instances without a deadlock or a 500', async () => {
    const key = await platform.newKey({ accountId: await platform.newAccount('premium') });
    const http2 = client((await platform.startSecondApi()).url);
    for (let round = 0; round < 5; round++) {
      const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? http2 : http)('/v3/customers?limit=1', { key }).then((r) => r.status)));
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(10);
    }
  });
});
