import { describe, expect, it } from 'vitest';
import type { RunningApi } from '../../api/server.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { TcpProxy } from '../support/tcp-proxy.ts';
import { useProxiedPlatform, type Http } from '../support/use-platform.ts';

// An API whose database connections pass through a proxy the test cuts: PostgreSQL "goes down"
// for it alone (the system PostgreSQL keeps running for everyone else).
let platform: TestPlatform, proxy: TcpProxy, api: RunningApi, http: Http, key: string;
useProxiedPlatform('postgres', {}, (t) => ({ platform, proxy, api, http, key } = t));

const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const out = await f();
  return [out, performance.now() - t0];
};

describe('while PostgreSQL is down', () => {
  it('serves normally through the proxy before the cut', async () => {
    const res = await http('/v3/customers', { key, body: { name: 'Before' } });
    expect(res.status).toBe(201);
  });

  it('answers 503 when PostgreSQL stops answering on an open connection, instead of waiting for it (stall)', async () => {
    // The API's pool holds open connections from these requests on.
    const created = await http('/v3/customers', { key, body: { name: 'Before the stall' } });
    expect(created.status).toBe(201);
    const read = () => http(`/v3/customers/${created.body.id}`, { key });
    expect((await read()).status).toBe(200);
    await proxy.cut('stall');
    try {
      // Its statements go out on an open connection and get no answer: the client's read timeout
      // (db/read-timeout.ts, a second past the 5 s statement timeout) gives up and drops it.
      const [res, ms] = await timed(read);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('service_unavailable');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(ms).toBeLessThan(10_000);
    } finally {
      await proxy.restore();
    }
    expect((await read()).body.name).toBe('Before the stall');
  });

  for (const mode of ['hang', 'refuse'] as const) {
    it(`answers problem+json 503 with Retry-After within 5 s, and /readyz within 1 s (${mode})`, async () => {
      await proxy.cut(mode);
      try {
        const [res, ms] = await timed(() => http('/v3/customers', { key, headers: { 'idempotency-key': `pg-down-${mode}` }, body: { name: 'During' } }));
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.body.code).toBe('service_unavailable');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(ms).toBeLessThan(5000);

        const [ready, readyMs] = await timed(() => http('/readyz'));
        expect(ready.status).toBe(503);
        expect(ready.body.checks.postgres).toBe(false);
        expect(ready.body.detail).toMatch(/PostgreSQL/);
        expect(readyMs).toBeLessThan(1500);
      } finally {
        await proxy.restore();
      }
      // Back up: the same key runs the request (it was not blocked), exactly once.
      const retry = await http('/v3/customers', { key, headers: { 'idempotency-key': `pg-down-${mode}` }, body: { name: 'During' } });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect(await platform.sql(`select 1 from customers where name = 'During' and id = $1`, [retry.body.id])).toHaveLength(1);
    });
  }

  it('frees a key whose claim was written before the database went away', async () => {
    // The claim is in the database; the request then fails with a 503 and its release cannot be
    // written: the API keeps trying, and the retry after the outage runs.
    const store = (await import('../../domain/idempotency/store.ts')).IdempotencyStore;
    const direct = new store(api.deps.pool);
    const { rows } = await api.deps.pool.query<{ account_id: string }>(`select account_id from api_keys limit 1`);
    const scope = { accountId: rows[0]!.account_id, livemode: false };
    expect((await direct.claim(scope, 'pg-claimed', 'f')).kind).toBe('claimed');
    await proxy.cut('refuse');
    await direct.releaseSoon(scope, 'pg-claimed'); // cannot reach the database: kept
    expect(await platform.sql(`select 1 from idempotency_records where key = 'pg-claimed'`)).toHaveLength(1);
    await proxy.restore();
    await expect.poll(() => platform.sql(`select 1 from idempotency_records where key = 'pg-claimed'`), { timeout: 5000 }).toHaveLength(0);
  });
});
