import { describe, expect, it } from 'vitest';
import type { Pool } from 'pg';
import type { RunningApi } from '../../api/server.ts';
import type { TestPlatform } from '../support/platform.ts';
import type { TcpProxy } from '../support/tcp-proxy.ts';
import { RequestLogBuffer } from '../../domain/requests/log-buffer.ts';
import { createLogger } from '../../platform/logger.ts';
import { useProxiedPlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform, proxy: TcpProxy, api: RunningApi, http: Http, key: string;
useProxiedPlatform('postgres', {}, (t) => ({ platform, proxy, api, http, key } = t));

const logged = (requestIds: string[]) =>
  platform.sql<{ request_id: string }>('select request_id from request_logs where request_id = any($1)', [requestIds]);

describe('request log during a PostgreSQL outage', () => {
  it('keeps the rows of requests answered while the database was down and writes them once it is back', async () => {
    const ok = await http('/v3/customers', { key, body: { name: 'Logged' } });
    expect(ok.status).toBe(201);
    await api.deps.requestLog.flush();
    await proxy.cut('refuse');
    const during: string[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const res = await http('/v3/customers', { key, body: { name: 'Lost?' } });
        expect(res.status).toBe(503);
        during.push(res.headers.get('request-id')!);
      }
      await api.deps.requestLog.flush(); // fails: kept
      expect(api.deps.requestLog.stats().pending).toBeGreaterThanOrEqual(3);
      expect(await logged(during)).toHaveLength(0);
    } finally {
      await proxy.restore();
    }
    // The buffer's own retry writes them (no explicit flush).
    await expect.poll(async () => (await logged(during)).length, { timeout: 15_000, interval: 200 }).toBe(3);
    expect(api.deps.requestLog.stats()).toEqual({ pending: 0, dropped: 0 });
    expect(await logged([ok.headers.get('request-id')!])).toHaveLength(1);
  });

  it('keeps at most its bound, dropping the oldest and counting them', async () => {
    const warnings: string[] = [];
    const sink = { write: (line: string) => warnings.push(line) };
    const logger = createLogger('warn', {}, { out: sink, err: sink });
    const buffer = new RequestLogBuffer(api.deps.pool, logger, 60_000, 500, 5);
    await proxy.cut('refuse');
    try {
      for (let i = 0; i < 8; i++) {
        buffer.add({ requestId: `req_bound_${i}`, accountId: null, apiKeyId: null, livemode: null, method: 'GET', path: '/v3/x', status: 200, durationMs: 1, createdAt: new Date() });
      }
      await buffer.flush();
      expect(buffer.stats()).toEqual({ pending: 5, dropped: 3 });
      expect(warnings.some((w) => w.includes('request log rows dropped'))).toBe(true);
    } finally {
      await proxy.restore();
    }
    await buffer.flush();
    expect(buffer.stats()).toEqual({ pending: 0, dropped: 3 });
    const rows = await logged(Array.from({ length: 8 }, (_, i) => `req_bound_${i}`));
    expect(rows.map((r) => r.request_id).sort()).toEqual(['req_bound_3', 'req_bound_4', 'req_bound_5', 'req_bound_6', 'req_bound_7']);
  });
});

describe('request log batches', () => {
  const entry = (id: string) => ({ requestId: id, accountId: null, apiKeyId: null, livemode: null, method: 'GET', path: '/v3/x', status: 200, durationMs: 1, createdAt: new Date() });

  it('leaves the rows that arrive during a write for the next batch instead of writing them in a statement of their own', async () => {
    // The buffer's pool, with each write held until released and each write's rows counted.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const started: number[] = [], written: number[] = [];
    const pool = {
      async query(text: string, values: [string]) {
        const rows = (JSON.parse(values[0]) as unknown[]).length;
        started.push(rows);
        await held;
        const result = await api.deps.pool.query(text, values);
        written.push(rows);
        return result;
      },
    } as unknown as Pool;
    const buffer = new RequestLogBuffer(pool, createLogger('error'), 60_000, 4);
    const ids = Array.from({ length: 6 }, (_, i) => `req_batch_${process.pid}_${i}`);
    for (const id of ids.slice(0, 4)) buffer.add(entry(id)); // a full batch: its write starts
    await expect.poll(() => started).toEqual([4]);
    for (const id of ids.slice(4)) buffer.add(entry(id)); // two more while it is held
    release();
    await expect.poll(() => written).toEqual([4]);
    // The two wait for their interval (a minute here) or a full batch; an explicit flush writes them.
    expect(started).toEqual([4]);
    expect(buffer.stats()).toEqual({ pending: 2, dropped: 0 });
    const first = buffer.flush();
    expect(buffer.flush()).toBe(first); // a flush not started yet is shared
    await first;
    expect(written).toEqual([4, 2]);
    expect((await logged(ids)).length).toBe(6);
  });
});
