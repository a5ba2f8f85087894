import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import pg from 'pg';
import { realtimeHubOf } from '../../domain/warehouses/realtime.ts';
import { workerProcesses } from '../support/worker-processes.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';
import { create, eventually, level, openShop, stock, stockedProduct, type Shop } from './support.ts';

let platform: TestPlatform;
let http: Http;
let key: string;
let accountId: string;
let shop: Shop;
const children: ChildProcess[] = [];
// No in-process worker: the transfer test runs its workers in child processes it can kill.
const workers = workerProcesses(() => platform, { WORKER_AREAS: 'warehouses' });

usePlatform({ env: { RATE_LIMIT_CONCURRENCY: '100', RATE_LIMIT_PER_MINUTE: '10000', LOG_LEVEL: 'error' } }, async (t) => {
  ({ platform, http, key, accountId } = t);
  shop = await openShop(http, key);
  for (const sku of ['RT-1', 'RT-2', 'RT-3']) await stockedProduct(http, key, shop, sku, 0);
  await realtimeHubOf(platform.api.deps)!.ready();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await workers.killAll();
});

interface Client {
  ws: WebSocket;
  messages: any[];
  next(type: string, timeoutMs?: number): Promise<any>;
  send(msg: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
}

/** A WebSocket client that queues what it receives; `next(type)` takes the first unread message of that type. */
function connect(baseUrl: string, opts: { key?: string; query?: string } = {}): Promise<Client> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/v3/inventory/realtime${opts.query ?? ''}`, {
    headers: opts.key ? { authorization: `Bearer ${opts.key}` } : {},
  });
  const messages: any[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    messages.push(JSON.parse(data.toString()));
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const client: Client = {
    ws, messages, closed,
    send: (msg) => ws.send(JSON.stringify(msg)),
    async next(type, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = messages.findIndex((m) => m.type === type);
        if (i >= 0) return messages.splice(i, 1)[0];
        if (Date.now() > deadline) throw new Error(`no ${type} message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 100);
        });
      }
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body || '{}') })));
    });
    ws.once('error', reject);
  });
}

/**
 * A subscriber on a raw TCP socket (no WebSocket library that would resume reading behind the
 * test's back): it upgrades, subscribes to everything, and then reads only when told.
 */
async function rawSubscriber(baseUrl: string, apiKey: string) {
  const url = new URL(baseUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const received = () => Buffer.concat(chunks);
  const waitFor = async (text: string) => eventually(async () => received().includes(text), 5000, text);
  socket.write(`GET /v3/inventory/realtime HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
    + `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`);
  await waitFor('"welcome"');
  const payload = Buffer.from(JSON.stringify({ type: 'subscribe' }));
  const mask = randomBytes(4);
  socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ mask[i % 4]!)]));
  await waitFor('"subscribed"');
  return {
    socket,
    /** Reads everything that was sent, up to the server's close frame (0x88, length, code, reason), and returns its code. */
    async closeCode(): Promise<number> {
      socket.resume();
      const reason = await eventually(async () => {
        const i = received().indexOf('slow consumer');
        return i > 0 ? i : undefined;
      }, 10_000, 'the close frame');
      expect(received()[reason - 4]).toBe(0x88);
      return received().readUInt16BE(reason - 2);
    },
  };
}

const setStock = (sku: string, quantity: number, warehouseId = shop.warehouseId) => stock(http, key, warehouseId, sku, quantity);

describe('WebSocket /v3/inventory/realtime', () => {
  it('authenticates with the API key or a ticket, and refuses missing, unknown, tampered and under-permitted credentials', async () => {
    await expect(connect(platform.url)).rejects.toMatchObject({ status: 401, body: { code: 'api_key_missing' } });
    await expect(connect(platform.url, { key: `bp_test_${'x'.repeat(40)}` })).rejects.toMatchObject({ status: 401, body: { code: 'api_key_invalid' } });
    const restricted = await platform.newKey({ type: 'restricted', permissions: ['commerce:read'] });
    await expect(connect(platform.url, { key: restricted })).rejects.toMatchObject({ status: 403, body: { code: 'permission_denied' } });

    const res = await http('/v3/inventory/realtime/tickets', { key, method: 'POST' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ object: 'realtime_ticket', ticket: expect.stringMatching(/^rtt_/), url: expect.stringContaining('?ticket=rtt_') });
    const viaTicket = await connect(platform.url, { query: `?ticket=${res.body.ticket}` });
    expect(await viaTicket.next('welcome')).toMatchObject({ livemode: false, last_seq: expect.any(Number) });
    viaTicket.ws.close();
    const tampered = res.body.ticket.slice(0, -2) + (res.body.ticket.endsWith('AA') ? 'BB' : 'AA');
    await expect(connect(platform.url, { query: `?ticket=${tampered}` })).rejects.toMatchObject({ status: 401, body: { code: 'realtime_ticket_invalid' } });
    await expect(connect(platform.url, { key, query: '' }).then((c) => c.ws.close())).resolves.toBeUndefined();
  });

  it('streams changes of the subscribed warehouses and SKUs with a per-account sequence, isolated per account and mode', async () => {
    const mine = await connect(platform.url, { key });
    const welcome = await mine.next('welcome');
    mine.send({ type: 'subscribe', warehouses: [shop.warehouseId], skus: ['RT-1'] });
    expect(await mine.next('subscribed')).toMatchObject({ warehouses: [shop.warehouseId], skus: ['RT-1'] });
    const otherAccount = await connect(platform.url, { key: await platform.newKey({ accountId: await platform.newAccount() }) });
    otherAccount.send({ type: 'subscribe' });
    await otherAccount.next('subscribed');
    const liveKey = await platform.newKey({ type: 'live' });
    const otherMode = await connect(platform.url, { key: liveKey });
    otherMode.send({ type: 'subscribe' });
    await otherMode.next('subscribed');

    await setStock('RT-2', 4); // not subscribed to this SKU
    await setStock('RT-1', 7);
    const change = await mine.next('stock_changed');
    expect(change).toMatchObject({
      warehouse_id: shop.warehouseId, sku: 'RT-1', quantity: 7, reserved: 0, available: 7, in_transit: 0,
      change: { quantity: 7, reserved: 0, in_transit: 0 }, reason: 'stock_update',
    });
    expect(change.seq).toBe(welcome.last_seq + 2); // RT-2's change took the number before it
    await setStock('RT-1', 5);
    expect((await mine.next('stock_changed')).seq).toBe(change.seq + 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(mine.messages).toEqual([]);
    expect(otherAccount.messages.filter((m) => m.type === 'stock_changed')).toEqual([]);
    expect(otherMode.messages.filter((m) => m.type === 'stock_changed')).toEqual([]);
    mine.send('not json');
    expect(await mine.next('error')).toMatchObject({ code: 'invalid_message' });
    mine.send({ type: 'subscribe', since: -1 });
    expect(await mine.next('error')).toMatchObject({ code: 'invalid_message' });
    for (const c of [mine, otherAccount, otherMode]) c.ws.close();
  });

  it('replays what a reconnecting client missed from the ledger, or asks it to resync when that is too much', async () => {
    const first = await connect(platform.url, { key });
    first.send({ type: 'subscribe', skus: ['RT-3'] });
    await first.next('subscribed');
    await setStock('RT-3', 1);
    const last = (await first.next('stock_changed')).seq;
    first.ws.close();
    await first.closed;
    for (const q of [2, 3, 4]) await setStock('RT-3', q);
    await setStock('RT-1', 9);

    const again = await connect(platform.url, { key });
    again.send({ type: 'subscribe', skus: ['RT-3'], since: last });
    expect(await again.next('subscribed')).toMatchObject({ replayed: 3 });
    const replayed = [await again.next('stock_changed'), await again.next('stock_changed'), await again.next('stock_changed')];
    expect(replayed.map((m) => m.quantity)).toEqual([2, 3, 4]);
    expect(replayed.map((m) => m.seq)).toEqual([...replayed.map((m) => m.seq)].sort((a, b) => a - b));
    await setStock('RT-3', 5);
    expect((await again.next('stock_changed')).quantity).toBe(5);

    const hub = realtimeHubOf(platform.api.deps)!;
    hub.options.replayLimit = 2;
    try {
      const late = await connect(platform.url, { key });
      late.send({ type: 'subscribe', skus: ['RT-3'], since: last });
      expect(await late.next('resync_required')).toMatchObject({ last_seq: expect.any(Number) });
      late.ws.close();
    } finally {
      hub.options.replayLimit = 1000;
    }
    again.ws.close();
  });

  it('catches a socket up from the ledger when the process\'s LISTEN connection was lost', async () => {
    const c = await connect(platform.url, { key });
    await c.next('welcome');
    c.send({ type: 'subscribe', skus: ['RT-2'] });
    await c.next('subscribed');
    // The database drops the listening connection; a change commits before it is back.
    const killed = await platform.sql<{ ok: boolean }>(`select pg_terminate_backend(pid) as ok from pg_stat_activity where query like 'listen bp_stock_pending%' and datname = current_database()`);
    expect(killed.length).toBeGreaterThan(0);
    await setStock('RT-2', 42);
    const caught = await c.next('stock_changed', 15_000);
    expect(caught).toMatchObject({ sku: 'RT-2', quantity: 42 });
    await realtimeHubOf(platform.api.deps)!.ready();
    await setStock('RT-2', 43);
    expect(await c.next('stock_changed', 15_000)).toMatchObject({ quantity: 43, seq: caught.seq + 1 });
    c.ws.close();
  });

  it('drops a peer that stops answering pings, and closes a consumer that does not read (4429)', async () => {
    const hub = realtimeHubOf(platform.api.deps)!;
    // Each socket on an account of its own, so the counts are about it alone.
    const deadAccount = await platform.newAccount();
    const dead = await connect(platform.url, { key: await platform.newKey({ accountId: deadAccount }) });
    await dead.next('welcome');
    expect(hub.connectionsOf({ accountId: deadAccount, livemode: false })).toBe(1);
    hub.setHeartbeat(150);
    try {
      // The client's socket stops reading: pings go unanswered.
      (dead.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      await eventually(async () => hub.connectionsOf({ accountId: deadAccount, livemode: false }) === 0, 10_000, 'the dead peer to be dropped');
    } finally {
      hub.setHeartbeat(30_000);
    }

    await setStock('RT-1', 1);
    const mine = { accountId, livemode: false };
    await eventually(async () => hub.connectionsOf(mine) === 0, 10_000, 'the earlier tests\' sockets to close');
    const slow = await rawSubscriber(platform.url, key);
    hub.options.maxBufferedBytes = 64 * 1024;
    try {
      slow.socket.pause(); // reads nothing more: the server's buffer for it grows
      await platform.sql(`insert into inventory_levels (account_id, livemode, warehouse_id, sku, quantity, reserved, safety_stock, reorder_point, updated_at)
        select account_id, livemode, warehouse_id, 'RT-BULK-' || i, 0, 0, 0, 0, now() from inventory_levels, generate_series(1, 2000) i
         where warehouse_id = $1 and sku = 'RT-1'`, [shop.warehouseId]);
      // 2,000 changes at a time until the server gives up on the reader (the kernel's buffers fill first).
      for (let round = 0; round < 20 && hub.connectionsOf(mine) === 1; round++) {
        // Each change carries a 2 kB reference: a few rounds fill the kernel's buffers.
        await platform.sql(`begin; select set_config('bp.stock_reference', repeat('x', 2000), true);
          update inventory_levels set quantity = quantity + 1 where warehouse_id = '${shop.warehouseId}' and sku like 'RT-BULK-%'; commit;`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await eventually(async () => hub.connectionsOf(mine) === 0, 20_000, 'the slow consumer to be closed');
      expect(await slow.closeCode()).toBe(4429);
    } finally {
      hub.options.maxBufferedBytes = 1024 * 1024;
      slow.socket.destroy();
    }
  });

  it('numbers concurrent changes after their commits: no gap, no number twice, each SKU in commit order, each change sent once', async () => {
    for (const sku of ['SEQ-A', 'SEQ-B']) {
      await stockedProduct(http, key, shop, sku, 0);
      await setStock(sku, 1000);
    }
    // A key of its own: the burst does not count against the shared key's limit (the other API process's test).
    const writer = await platform.newKey();
    // A second account writes at the same time: the passes number both, each on its own counter.
    const otherAccount = await platform.newAccount();
    const otherKey = await platform.newKey({ accountId: otherAccount });
    const otherShop = await openShop(http, otherKey);
    await stockedProduct(http, otherKey, otherShop, 'SEQ-A', 0);
    const c = await connect(platform.url, { key });
    await c.next('welcome');
    c.send({ type: 'subscribe', skus: ['SEQ-A', 'SEQ-B'] });
    const { last_seq: start } = await c.next('subscribed');
    // Other replicas' sequencers, as often as they can, beside this process's own.
    let writing = true;
    const rivalClients = await Promise.all([1, 2, 3].map(async () => {
      const client = new pg.Client({ connectionString: platform.dbUrl });
      await client.connect();
      return client;
    }));
    const rivals = rivalClients.map(async (client) => {
      try {
        while (writing) await client.query('select bp_sequence_pending_stock()');
      } finally {
        await client.end();
      }
    });
    const N = 80;
    const delta = (i: number) => (i % 3 === 0 ? 2 : -1);
    const wave = (from: number, to: number) => Promise.all([
      ...Array.from({ length: to - from }, (_, j) => http(`/v3/warehouses/${shop.warehouseId}/movements`, {
        key: writer, body: { sku: (from + j) % 2 ? 'SEQ-A' : 'SEQ-B', quantity: delta(from + j), reason: 'sequencer_test' },
      })),
      ...Array.from({ length: (to - from) / 4 }, () => http(`/v3/warehouses/${otherShop.warehouseId}/movements`, {
        key: otherKey, body: { sku: 'SEQ-A', quantity: 1, reason: 'sequencer_test' },
      })),
    ]);
    // The first half while four sequencers race: small batches, numbered as they commit.
    const answers = await wave(0, N / 2);
    writing = false;
    await Promise.all(rivals);
    // The second half while the account's counter row is held: one batch of 40 rows, numbered when it is let go.
    const holder = new pg.Client({ connectionString: platform.dbUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from stock_sequences where account_id = $1 and livemode = false for update', [accountId]);
      answers.push(...await wave(N / 2, N));
    } finally {
      await holder.query('commit');
      await holder.end();
    }
    expect(answers.map((a) => a.status)).toEqual(Array(N + N / 4).fill(201));

    const changes = await eventually(async () => {
      const got = c.messages.filter((m) => m.type === 'stock_changed' && m.reason === 'sequencer_test');
      return got.length >= N ? got : undefined;
    }, 20_000, `${N} changes on the socket`);
    expect(changes).toHaveLength(N);
    const seqs = changes.map((m) => m.seq as number);
    expect(seqs.every((s, i) => s > start && (i === 0 || s > seqs[i - 1]!))).toBe(true);
    // Each SKU's changes arrive in the order they were applied: every level follows from the one before.
    for (const sku of ['SEQ-A', 'SEQ-B']) {
      let quantity = 1000;
      for (const m of changes.filter((x) => x.sku === sku)) {
        expect(m.quantity - m.change.quantity).toBe(quantity);
        quantity = m.quantity;
      }
      expect((await level(platform, shop.warehouseId, sku)).quantity).toBe(quantity);
    }
    const expectedTotal = Array.from({ length: N }, (_, i) => delta(i)).reduce((a, b) => a + b, 0);
    expect(changes.reduce((sum, m) => sum + m.change.quantity, 0)).toBe(expectedTotal);
    // Each account's whole ledger is numbered 1..n, the other account's changes on its own counter.
    for (const account of [accountId, otherAccount]) {
      const ledger = await eventually(async () => {
        const [row] = await platform.sql<{ n: number; numbered: number; max: number }>(
          'select count(*)::int as n, count(seq)::int as numbered, coalesce(max(seq), 0)::int as max from stock_movements where account_id = $1 and livemode = false', [account]);
        return row!.numbered === row!.n ? row : undefined;
      }, 10_000, 'every movement to be numbered');
      expect(ledger).toEqual({ n: ledger!.n, numbered: ledger!.n, max: ledger!.n });
    }
    expect((await level(platform, otherShop.warehouseId, 'SEQ-A')).quantity).toBe(N / 4);
    c.ws.close();
  });

  it('delivers a change made through one API process to a socket held by another (LISTEN/NOTIFY)', async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL('../support/api-process.ts', import.meta.url))], {
      env: {
        ...process.env, DATABASE_URL: platform.dbUrl, TEMPORAL_ADDRESS: platform.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: platform.taskQueuePrefix,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    const otherUrl = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const ready = /"url":"([^"]+)"/.exec(out);
        if (ready) resolve(ready[1]!);
      });
      child.once('exit', (code) => reject(new Error(`api process exited (${code}) before it listened`)));
    });
    const w2 = (await create(http, key, '/v3/warehouses', { name: 'Replica test' })).id;
    // The socket on the other process; the change through this one.
    const remote = await connect(otherUrl, { key });
    await remote.next('welcome');
    remote.send({ type: 'subscribe', warehouses: [w2] });
    await remote.next('subscribed');
    await eventually(async () => {
      await setStock('RT-2', Math.floor(Math.random() * 1000) + 1, w2);
      return remote.messages.some((m) => m.type === 'stock_changed');
    }, 30_000, 'a change through this process on the other process\'s socket');
    expect(remote.messages.find((m) => m.type === 'stock_changed')).toMatchObject({ warehouse_id: w2, sku: 'RT-2', reason: 'stock_update' });
    remote.ws.close();
    child.kill('SIGKILL');
  });
});

describe('a worker killed in the middle of a transfer step', () => {
  it('dispatches once on another worker: stock never negative, never counted twice', async () => {
    const first = await workers.start();
    const replacement = workers.standby();
    const to = (await create(http, key, '/v3/warehouses', { name: 'Crash destination' })).id;
    await stockedProduct(http, key, shop, 'CRASH-T', 0);
    await stock(http, key, shop.warehouseId, 'CRASH-T', 20);
    const t = (await http('/v3/warehouses/transfer', { key, method: 'PUT', body: { from_warehouse: shop.warehouseId, to_warehouse: to, items: [{ sku: 'CRASH-T', quantity: 8 }], reference: 'CRASH-1' } })).body;
    expect(t.status).toBe('reserved');

    // Hold the source row: the dispatch step blocks inside its transaction, and the worker is killed there.
    const holder = new pg.Client({ connectionString: platform.dbUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from inventory_levels where warehouse_id = $1 and sku = $2 for update', [shop.warehouseId, 'CRASH-T']);
      const dispatched = http(`/v3/warehouses/transfers/${t.id}/dispatch`, { key, method: 'POST' });
      await eventually(async () => (await platform.sql(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`)).length > 0, 15_000, 'the dispatch step to block');
      await workers.kill(first);
      await holder.query('commit');
      await replacement.start();
      // The answer comes once the step ran again on the replacement; on a loaded machine that can
      // outlast the API's Temporal deadline (503, retry-safe): then the transfer is read until it moved.
      const res = await dispatched;
      expect([200, 503], res.text).toContain(res.status);
      await eventually(async () => (await http(`/v3/warehouses/transfers/${t.id}`, { key })).body.status === 'in_transit', 60_000, 'the dispatch');
    } finally {
      await holder.end();
    }
    expect(await level(platform, shop.warehouseId, 'CRASH-T')).toEqual({ quantity: 12, reserved: 0, in_transit: 0 });
    expect(await level(platform, to, 'CRASH-T')).toEqual({ quantity: 0, reserved: 0, in_transit: 8 });
    const moves = await platform.sql<{ n: number }>(`select count(*)::int as n from stock_movements where reference = $1 and reason = 'transfer_dispatch'`, [t.id]);
    expect(moves[0]!.n).toBe(2); // one row at the source, one at the destination: applied once
    const history = await platform.temporal.client.workflow.getHandle(t.workflow_id).fetchHistory();
    const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => Number(e.activityTaskStartedEventAttributes!.attempt));
    expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
  }, 150_000);
});
