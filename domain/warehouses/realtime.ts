import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { WebSocket, WebSocketServer } from 'ws';
import { installationSecret } from '../../db/installation-settings.ts';
import { coalesced, type Coalesced } from '../../platform/coalesced.ts';
import { ApiError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import { hashKey, isWellFormedKey } from '../accounts/keys.ts';
import { allows } from '../permissions.ts';
import type { Scope } from '../scope.ts';
import { MOVEMENT_COLUMNS } from './inventory.ts';
import type { StockChangeView } from './schemas.ts';

/**
 * The realtime inventory feed, `wss://…/v3/inventory/realtime` (protocol: docs/inventory-realtime.md).
 * Every API process holds one PostgreSQL connection that LISTENs on two channels. A stock-changing
 * commit wakes the sequencers (`bp_stock_pending`); this process's sequencer numbers the committed,
 * unnumbered ledger rows per account and mode (`bp_sequence_pending_stock()`, at most one pass per
 * `sequencerIntervalMs`) and each batch is announced as a range (`bp_stock_numbered`), which every
 * replica reads from the ledger once and sends to its sockets, so a change made through any replica
 * reaches every replica's sockets in sequence order. A client that reconnects with its last sequence
 * number gets what it missed from the ledger (or `resync_required` when that is more than
 * `replayLimit` changes). Dead peers are dropped by ping/pong; a consumer that does not read is
 * closed (4429) instead of buffering without bound.
 */

export const REALTIME_PATH = '/v3/inventory/realtime';
/** Written by every stock-changing transaction (migration 0160): there are rows to number. */
export const PENDING_CHANNEL = 'bp_stock_pending';
/** Written by a sequencer's pass: `{a, l, f, t}`, account, mode and the range of numbers it gave. */
export const NUMBERED_CHANNEL = 'bp_stock_numbered';
export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  invalidMessage: 4400,
  keyRevoked: 4401,
  slowConsumer: 4429,
} as const;
export const REQUIRED_PERMISSION = 'warehouses:read' as const;

export interface RealtimeOptions {
  /** Ping interval; a peer that has not answered the previous ping by the next one is dropped. */
  heartbeatMs: number;
  /** A socket with more than this many bytes waiting to be sent is closed with 4429. */
  maxBufferedBytes: number;
  /** Most missed changes replayed on reconnect; beyond it, `resync_required`. */
  replayLimit: number;
  /** Lifetime of a browser ticket. */
  ticketTtlMs: number;
  /** Least time between the starts of two sequencer passes (changes committed meanwhile share one). */
  sequencerIntervalMs: number;
  /** A pass at least this often, woken or not (a writer that crashed between its commit and its NOTIFY). */
  sequencerSweepMs: number;
}

const envInt = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isSafeInteger(v) && v > 0 ? v : fallback;
};

export function defaultRealtimeOptions(): RealtimeOptions {
  return {
    heartbeatMs: envInt('INVENTORY_WS_HEARTBEAT_MS', 30_000),
    maxBufferedBytes: envInt('INVENTORY_WS_MAX_BUFFERED_BYTES', 1024 * 1024),
    replayLimit: envInt('INVENTORY_WS_REPLAY_LIMIT', 1000),
    ticketTtlMs: envInt('INVENTORY_WS_TICKET_TTL_MS', 60_000),
    sequencerIntervalMs: envInt('INVENTORY_SEQUENCER_INTERVAL_MS', 10),
    sequencerSweepMs: envInt('INVENTORY_SEQUENCER_SWEEP_MS', 1000),
  };
}

/** A numbered stock change, as the hub passes it around. */
interface Notice {
  a: string; l: boolean; s: number; w: string; k: string; q: number; r: number; t: number;
  dq: number; dr: number; dt: number; why: string; ref: string | null; at: string;
}

/** A sequencer's batch: account, mode, first and last number. */
interface Batch {
  a: string; l: boolean; f: number; t: number;
}

interface LedgerRow {
  seq: string; warehouse_id: string; sku: string; quantity_before: number; quantity_after: number; reserved_before: number;
  reserved_after: number; in_transit_before: number; in_transit_after: number; reason: string; reference: string | null; created_at: string;
}

function noticeOf(scope: Scope, r: LedgerRow): Notice {
  return {
    a: scope.accountId, l: scope.livemode, s: Number(r.seq), w: r.warehouse_id, k: r.sku, q: r.quantity_after, r: r.reserved_after,
    t: r.in_transit_after, dq: r.quantity_after - r.quantity_before, dr: r.reserved_after - r.reserved_before,
    dt: r.in_transit_after - r.in_transit_before, why: r.reason, ref: r.reference, at: r.created_at,
  };
}

/** Most ledger rows read in one query when a batch is fanned out. */
const FANOUT_PAGE = 1000;

export interface StockChangedMessage extends StockChangeView {
  type: 'stock_changed';
}

function change(n: Notice): StockChangeView {
  return {
    seq: n.s, warehouse_id: n.w, sku: n.k, quantity: n.q, reserved: n.r, available: n.q - n.r, in_transit: n.t,
    change: { quantity: n.dq, reserved: n.dr, in_transit: n.dt }, reason: n.why, reference: n.ref, occurred_at: n.at,
  };
}

function message(n: Notice): StockChangedMessage {
  return { type: 'stock_changed', ...change(n) };
}

/** A subscriber inside the process (GraphQL's `inventoryChanged` over server-sent events). */
interface Listener {
  warehouses: Set<string> | null;
  skus: Set<string> | null;
  onChange: (change: StockChangeView) => void;
  /** Called when the hub closes (the server shuts down): the subscriber ends its stream. */
  onClose: () => void;
}

interface Identity extends Scope {
  keyId: string;
}

interface Conn {
  ws: WebSocket;
  id: Identity;
  scopeKey: string;
  subscribed: boolean;
  warehouses: Set<string> | null;
  skus: Set<string> | null;
  lastSeq: number;
  replaying: Notice[] | null;
  alive: boolean;
}

export interface AdmitKey {
  (keyHash: string): Promise<{ outcome: string; key_id: string; account_id: string; livemode: boolean; key_type: string; permissions: string[] }>;
}

export interface RealtimeDeps {
  pool: pg.Pool;
  logger: Logger;
  /** Authenticates (and counts) a key the way every request is admitted. */
  admitKey: AdmitKey;
  /** Gives the admitted request's concurrency slot back (the upgrade is one request). */
  releaseKey: (keyId: string) => void;
}

const scopeKey = (accountId: string, livemode: boolean) => `${accountId}:${livemode ? 'live' : 'test'}`;

/** The hub of one API process: the LISTEN connection and the sockets. */
export class InventoryRealtime {
  readonly options: RealtimeOptions;
  readonly #deps: RealtimeDeps;
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  readonly #conns = new Map<string, Set<Conn>>();
  readonly #listeners = new Map<string, Set<Listener>>();
  #listener: pg.Client | null = null;
  #closed = false;
  #heartbeat: NodeJS.Timeout | null = null;
  #reconnect: NodeJS.Timeout | null = null;
  #secret: Promise<string> | null = null;
  /** Sockets written to in this turn of the event loop, corked until it ends (one write for a burst). */
  readonly #corked = new Set<{ cork(): void; uncork(): void }>();
  #listening: Promise<void> | null = null;
  /** Batches being fanned out, in order. */
  #fanout: Promise<void> = Promise.resolve();
  /** This process's stock sequencer: passes of `bp_sequence_pending_stock()`, woken by `bp_stock_pending`. */
  readonly #sequencer: Coalesced;
  #sweep: NodeJS.Timeout | null = null;

  constructor(deps: RealtimeDeps, options: Partial<RealtimeOptions> = {}) {
    this.#deps = deps;
    this.options = { ...defaultRealtimeOptions(), ...options };
    // PostgreSQL away: the rows wait, numbered by the next pass that succeeds.
    this.#sequencer = coalesced(() => deps.pool.query('select bp_sequence_pending_stock()'), {
      minIntervalMs: this.options.sequencerIntervalMs,
      retryDelayMs: (failures) => Math.min(5000, 100 * 2 ** failures),
      onError: (err, failures) => {
        if (failures === 1) deps.logger.warn('realtime: cannot number stock changes', { error: (err as Error).message });
      },
    });
  }

  /** Number of open sockets (tests, metrics). */
  get connections(): number {
    let n = 0;
    for (const set of this.#conns.values()) n += set.size;
    return n;
  }

  /** Serves upgrades of `REALTIME_PATH` on `server`; starts listening for changes. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== REALTIME_PATH) {
        // Only this endpoint upgrades; anything else is refused plainly.
        if (server.listenerCount('upgrade') === 1) reject(socket, 404, 'route_not_found', `No WebSocket endpoint at ${url.pathname}.`, `Connect to ${REALTIME_PATH}.`);
        return;
      }
      void this.#upgrade(req, socket, head, url);
    });
    this.#listening = this.#listen();
    this.setHeartbeat(this.options.heartbeatMs);
    this.#sweep = setInterval(() => this.#sequencer.request(), this.options.sequencerSweepMs);
    this.#sweep.unref();
  }

  /** Changes the heartbeat interval (tests shorten it). */
  setHeartbeat(ms: number): void {
    this.options.heartbeatMs = ms;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => this.#beat(), ms);
    this.#heartbeat.unref();
  }

  /** Subscribers inside the process (GraphQL subscriptions), of every account. */
  get subscribers(): number {
    let n = 0;
    for (const set of this.#listeners.values()) n += set.size;
    return n;
  }

  /** Open sockets of one account and mode. */
  connectionsOf(scope: Scope): number {
    return this.#conns.get(scopeKey(scope.accountId, scope.livemode))?.size ?? 0;
  }

  /**
   * Calls `onChange` with every change of the scope's stock that passes the filter (null: all), as
   * it commits, from when the returned promise resolves (the LISTEN connection is up) until the
   * returned function is called, or the hub closes (`onClose`: the server shuts down, the client
   * reconnects to another replica). No replay: a subscriber that reconnects reads the stock again.
   */
  async subscribe(
    scope: Scope, filter: { warehouses: readonly string[] | null; skus: readonly string[] | null },
    onChange: (change: StockChangeView) => void, onClose: () => void = () => undefined,
  ): Promise<() => void> {
    await this.ready();
    if (this.#closed) throw new ApiError({ status: 503, code: 'service_unavailable', title: 'Service Unavailable', detail: 'This server is shutting down.', suggestion: 'Reconnect (to another replica).' });
    const key = scopeKey(scope.accountId, scope.livemode);
    const listener: Listener = { warehouses: filter.warehouses && new Set(filter.warehouses), skus: filter.skus && new Set(filter.skus), onChange, onClose };
    let set = this.#listeners.get(key);
    if (!set) this.#listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (!set.size && this.#listeners.get(key) === set) this.#listeners.delete(key);
    };
  }

  /** Resolves once the LISTEN connection is up. */
  ready(): Promise<void> {
    return this.#listening ?? Promise.resolve();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    if (this.#reconnect) clearTimeout(this.#reconnect);
    if (this.#sweep) clearInterval(this.#sweep);
    await this.#sequencer.stop();
    for (const set of this.#conns.values()) for (const c of set) c.ws.close(CLOSE_CODES.goingAway, 'server shutting down');
    for (const set of this.#listeners.values()) for (const l of set) l.onClose();
    this.#listeners.clear();
    await new Promise((r) => setTimeout(r, 20));
    for (const set of this.#conns.values()) for (const c of set) c.ws.terminate();
    this.#conns.clear();
    this.#wss.close();
    const l = this.#listener;
    this.#listener = null;
    await l?.end().catch(() => undefined);
  }

  // ---- tickets (browsers cannot set the Authorization header on a WebSocket) ----

  #ticketSecret(): Promise<string> {
    this.#secret ??= installationSecret(this.#deps.pool, 'inventory_realtime_ticket_secret');
    this.#secret.catch(() => (this.#secret = null));
    return this.#secret;
  }

  /** A short-lived ticket for the key: `?ticket=` on the WebSocket URL. */
  async issueTicket(id: Identity): Promise<{ ticket: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + this.options.ticketTtlMs);
    const payload = Buffer.from(JSON.stringify({ k: id.keyId, a: id.accountId, l: id.livemode, e: expiresAt.getTime() })).toString('base64url');
    const mac = createHmac('sha256', await this.#ticketSecret()).update(payload).digest('base64url');
    return { ticket: `rtt_${payload}.${mac}`, expiresAt };
  }

  async #verifyTicket(ticket: string): Promise<Identity | null> {
    const m = /^rtt_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(ticket);
    if (!m) return null;
    const expected = createHmac('sha256', await this.#ticketSecret()).update(m[1]!).digest();
    const given = Buffer.from(m[2]!, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const p = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as { k: string; a: string; l: boolean; e: number };
    if (p.e < Date.now()) return null;
    // The key must still be usable (revoked or expired since the ticket was issued: refused).
    const { rows } = await this.#deps.pool.query<{ ok: boolean }>(
      `select status = 'active' and (expires_at is null or expires_at > now()) as ok from api_keys where id = $1 and account_id = $2 and livemode = $3`,
      [p.k, p.a, p.l]);
    return rows[0]?.ok ? { keyId: p.k, accountId: p.a, livemode: p.l } : null;
  }

  // ---- connections ----

  async #authenticate(req: IncomingMessage, url: URL): Promise<Identity> {
    const ticket = url.searchParams.get('ticket');
    if (ticket !== null) {
      const id = await this.#verifyTicket(ticket);
      if (!id) throw new ApiError({ status: 401, code: 'realtime_ticket_invalid', title: 'Unauthorized', detail: 'The ticket is unknown, tampered with or expired (tickets live 60 seconds).', suggestion: 'Create a new ticket with POST /v3/inventory/realtime/tickets and connect within its lifetime.' });
      return id;
    }
    const header = req.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match || !isWellFormedKey(match[1]!)) {
      throw new ApiError({ status: 401, code: header ? 'api_key_malformed' : 'api_key_missing', title: 'Unauthorized', detail: 'No API key (or ticket) was sent.', suggestion: 'Send `Authorization: Bearer <key>`, or `?ticket=` from POST /v3/inventory/realtime/tickets.' });
    }
    const row = await this.#deps.admitKey(hashKey(match[1]!));
    if (row.outcome === 'admitted') this.#deps.releaseKey(row.key_id);
    switch (row.outcome) {
      case 'admitted': break;
      case 'unknown': throw new ApiError({ status: 401, code: 'api_key_invalid', title: 'Unauthorized', detail: 'This API key does not exist.', suggestion: 'Check the key.' });
      case 'revoked': throw new ApiError({ status: 401, code: 'api_key_revoked', title: 'Unauthorized', detail: 'This API key has been revoked.', suggestion: 'Use an active key.' });
      case 'expired': throw new ApiError({ status: 401, code: 'api_key_expired', title: 'Unauthorized', detail: 'This API key has expired.', suggestion: 'Use an active key.' });
      default: throw new ApiError({ status: 429, code: row.outcome === 'concurrency_limited' ? 'concurrency_limited' : 'rate_limited', title: 'Too Many Requests', detail: 'The key is over its rate limit.', suggestion: 'Retry in a minute.' });
    }
    const granted = row.key_type === 'restricted' ? row.permissions : ['*'];
    if (!allows(granted, REQUIRED_PERMISSION)) {
      throw new ApiError({ status: 403, code: 'permission_denied', title: 'Forbidden', detail: `This restricted key lacks the permission ${REQUIRED_PERMISSION}.`, suggestion: `Use a key with ${REQUIRED_PERMISSION}.` });
    }
    return { keyId: row.key_id, accountId: row.account_id, livemode: row.livemode };
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    let id: Identity;
    try {
      id = await this.#authenticate(req, url);
    } catch (err) {
      if (err instanceof ApiError) reject(socket, err.status, err.code, err.detail, err.suggestion);
      else {
        this.#deps.logger.warn('realtime upgrade failed', { error: (err as Error).message });
        reject(socket, 503, 'service_unavailable', 'The realtime feed cannot authenticate right now.', 'Retry in a few seconds.');
      }
      return;
    }
    if (this.#closed) return reject(socket, 503, 'service_unavailable', 'This server is shutting down.', 'Reconnect (to another replica).');
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, id));
  }

  #open(ws: WebSocket, id: Identity): void {
    const key = scopeKey(id.accountId, id.livemode);
    const conn: Conn = { ws, id, scopeKey: key, subscribed: false, warehouses: null, skus: null, lastSeq: 0, replaying: null, alive: true };
    let set = this.#conns.get(key);
    if (!set) this.#conns.set(key, (set = new Set()));
    set.add(conn);
    ws.on('pong', () => (conn.alive = true));
    ws.on('message', (data, isBinary) => void this.#onMessage(conn, isBinary ? null : data.toString()));
    ws.on('close', () => this.#drop(conn));
    ws.on('error', () => this.#drop(conn));
    void this.#currentSeq(id).then((seq) => this.#send(conn, { type: 'welcome', account_id: id.accountId, livemode: id.livemode, last_seq: seq, heartbeat_ms: this.options.heartbeatMs }));
  }

  #drop(conn: Conn): void {
    const set = this.#conns.get(conn.scopeKey);
    set?.delete(conn);
    if (set && !set.size) this.#conns.delete(conn.scopeKey);
  }

  async #currentSeq(id: Scope): Promise<number> {
    const { rows } = await this.#deps.pool.query<{ last_seq: string }>('select last_seq from stock_sequences where account_id = $1 and livemode = $2', [id.accountId, id.livemode]);
    return rows[0] ? Number(rows[0].last_seq) : 0;
  }

  async #onMessage(conn: Conn, text: string | null): Promise<void> {
    let msg: { type?: unknown; warehouses?: unknown; skus?: unknown; since?: unknown };
    try {
      msg = text === null ? {} : (JSON.parse(text) as typeof msg);
    } catch {
      return this.#error(conn, 'invalid_message', 'Messages are JSON objects, e.g. {"type":"subscribe","warehouses":["wh_…"]}.');
    }
    if (typeof msg !== 'object' || msg === null || msg.type !== 'subscribe') {
      return this.#error(conn, 'invalid_message', 'Unknown message type; the client sends {"type":"subscribe", "warehouses"?, "skus"?, "since"?}.');
    }
    const list = (v: unknown, field: string): Set<string> | null | string => {
      if (v === undefined || v === null) return null;
      if (!Array.isArray(v) || v.length > 1000 || !v.every((s) => typeof s === 'string' && s.length > 0 && s.length <= 64)) {
        return `${field} is a list of at most 1000 ids (strings of 1 to 64 characters)`;
      }
      return new Set(v as string[]);
    };
    const warehouses = list(msg.warehouses, 'warehouses');
    const skus = list(msg.skus, 'skus');
    if (typeof warehouses === 'string') return this.#error(conn, 'invalid_message', warehouses);
    if (typeof skus === 'string') return this.#error(conn, 'invalid_message', skus);
    const since = msg.since;
    if (since !== undefined && (typeof since !== 'number' || !Number.isSafeInteger(since) || since < 0)) {
      return this.#error(conn, 'invalid_message', 'since is the last sequence number you received (a non-negative integer)');
    }
    conn.warehouses = warehouses;
    conn.skus = skus;
    conn.subscribed = true;
    const current = await this.#currentSeq(conn.id);
    if (since === undefined) {
      conn.lastSeq = Math.max(conn.lastSeq, current);
      this.#send(conn, { type: 'subscribed', warehouses: warehouses ? [...warehouses] : null, skus: skus ? [...skus] : null, last_seq: current });
      return;
    }
    await this.#replay(conn, since, current);
  }

  /** Sends what the client missed since `since` (live changes wait meanwhile), or `resync_required`. */
  async #replay(conn: Conn, since: number, current: number): Promise<void> {
    conn.replaying = [];
    try {
      if (since > current) {
        conn.lastSeq = current;
        this.#send(conn, { type: 'resync_required', last_seq: current, reason: 'since is ahead of this account\'s feed (another mode or database?)' });
        return;
      }
      const args: unknown[] = [conn.id.accountId, conn.id.livemode, since];
      let filter = '';
      if (conn.warehouses) filter += ` and warehouse_id = any($${args.push([...conn.warehouses])})`;
      if (conn.skus) filter += ` and sku = any($${args.push([...conn.skus])})`;
      const { rows } = await this.#deps.pool.query(
        `select ${MOVEMENT_COLUMNS} from stock_movements where account_id = $1 and livemode = $2 and seq > $3 ${filter} order by seq limit ${this.options.replayLimit + 1}`, args);
      if (rows.length > this.options.replayLimit) {
        conn.lastSeq = current;
        this.#send(conn, { type: 'resync_required', last_seq: current, reason: `more than ${this.options.replayLimit} changes were missed; read the inventory again, then subscribe without since` });
        return;
      }
      this.#send(conn, { type: 'subscribed', warehouses: conn.warehouses ? [...conn.warehouses] : null, skus: conn.skus ? [...conn.skus] : null, last_seq: current, replayed: rows.length });
      for (const r of rows as LedgerRow[]) {
        const n = noticeOf(conn.id, r);
        this.#send(conn, message(n));
        conn.lastSeq = Math.max(conn.lastSeq, n.s);
      }
      conn.lastSeq = Math.max(conn.lastSeq, since);
    } finally {
      const buffered = conn.replaying ?? [];
      conn.replaying = null;
      for (const n of buffered) this.#deliver(conn, n);
    }
  }

  #error(conn: Conn, code: string, text: string): void {
    this.#send(conn, { type: 'error', code, message: text });
  }

  #send(conn: Conn, payload: object | Buffer): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    if (conn.ws.bufferedAmount > this.options.maxBufferedBytes) {
      this.#deps.logger.warn('realtime: slow consumer disconnected', { account_id: conn.id.accountId, buffered: conn.ws.bufferedAmount });
      conn.ws.close(CLOSE_CODES.slowConsumer, 'slow consumer: too many unread messages');
      this.#drop(conn);
      setTimeout(() => conn.ws.terminate(), 1000).unref();
      return;
    }
    // Changes that arrive together (one read of the LISTEN connection) leave in one write per socket.
    const socket = (conn.ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    if (socket && !this.#corked.has(socket)) {
      if (!this.#corked.size) setImmediate(() => this.#uncorkAll());
      socket.cork();
      this.#corked.add(socket);
    }
    // A change is encoded once and the same bytes go to every socket (a text frame).
    if (Buffer.isBuffer(payload)) conn.ws.send(payload, { binary: false });
    else conn.ws.send(JSON.stringify(payload));
  }

  #uncorkAll(): void {
    for (const socket of this.#corked) socket.uncork();
    this.#corked.clear();
  }

  #deliver(conn: Conn, n: Notice, encoded?: () => Buffer): void {
    if (!conn.subscribed) return;
    if (conn.replaying) {
      conn.replaying.push(n);
      return;
    }
    if (n.s <= conn.lastSeq) return;
    conn.lastSeq = n.s;
    if (conn.warehouses && !conn.warehouses.has(n.w)) return;
    if (conn.skus && !conn.skus.has(n.k)) return;
    this.#send(conn, encoded ? encoded() : message(n));
  }

  #beat(): void {
    for (const set of this.#conns.values()) {
      for (const c of set) {
        if (!c.alive) {
          c.ws.terminate();
          this.#drop(c);
          continue;
        }
        c.alive = false;
        c.ws.ping();
      }
    }
  }

  // ---- LISTEN ----

  async #listen(attempt = 0): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.#deps.pool.options);
    client.on('notification', (msg) => {
      if (msg.channel === PENDING_CHANNEL) return this.#sequencer.request();
      if (msg.channel !== NUMBERED_CHANNEL || !msg.payload) return;
      let batch: Batch;
      try {
        batch = JSON.parse(msg.payload) as Batch;
      } catch {
        return;
      }
      const key = scopeKey(batch.a, batch.l);
      if (!this.#conns.get(key)?.size && !this.#listeners.get(key)?.size) return;
      // Batches go out one after another, each read once for every socket of this process.
      this.#fanout = this.#fanout.then(() => this.#fanOut(batch)).catch((err: Error) => {
        this.#deps.logger.warn('realtime: cannot read a batch of stock changes', { error: err.message });
        this.#catchUp();
      });
    });
    client.on('error', (err) => {
      this.#deps.logger.warn('realtime: LISTEN connection lost', { error: err.message });
      this.#retry(client, attempt + 1);
    });
    client.on('end', () => this.#retry(client, attempt + 1));
    try {
      await client.connect();
      await client.query(`listen ${PENDING_CHANNEL}; listen ${NUMBERED_CHANNEL}`);
      this.#listener = client;
      // Rows written while no sequencer listened (this process starting, the connection lost).
      this.#sequencer.request();
      if (attempt > 0) this.#catchUp();
    } catch (err) {
      this.#deps.logger.warn('realtime: cannot LISTEN', { error: (err as Error).message });
      this.#retry(client, attempt + 1);
    }
  }

  /** Reads a batch from the ledger and delivers it to this process's subscribers of its account and mode. */
  async #fanOut(batch: Batch): Promise<void> {
    const scope: Scope = { accountId: batch.a, livemode: batch.l };
    const key = scopeKey(batch.a, batch.l);
    for (let from = batch.f; from <= batch.t; from += FANOUT_PAGE) {
      const { rows } = await this.#deps.pool.query<LedgerRow>(
        `select ${MOVEMENT_COLUMNS} from stock_movements where account_id = $1 and livemode = $2 and seq between $3 and $4 order by seq`,
        [batch.a, batch.l, from, Math.min(batch.t, from + FANOUT_PAGE - 1)]);
      for (const r of rows) {
        const n = noticeOf(scope, r);
        for (const l of this.#listeners.get(key) ?? []) {
          if ((!l.warehouses || l.warehouses.has(n.w)) && (!l.skus || l.skus.has(n.k))) l.onChange(change(n));
        }
        const set = this.#conns.get(key);
        if (!set) continue;
        let bytes: Buffer | undefined;
        const encoded = () => (bytes ??= Buffer.from(JSON.stringify(message(n))));
        for (const c of set) this.#deliver(c, n, encoded);
      }
    }
  }

  #retry(client: pg.Client, attempt: number): void {
    if (this.#closed || (this.#listener !== client && this.#listener !== null) || this.#reconnect) return;
    this.#listener = null;
    client.end().catch(() => undefined);
    this.#reconnect = setTimeout(() => {
      this.#reconnect = null;
      void this.#listen(attempt);
    }, Math.min(5000, 100 * 2 ** attempt));
    this.#reconnect.unref();
  }

  /** After the LISTEN connection came back: every socket gets what was committed meanwhile. */
  #catchUp(): void {
    for (const set of this.#conns.values()) {
      for (const c of set) {
        if (c.subscribed && !c.replaying) void this.#currentSeq(c.id).then((cur) => this.#replay(c, c.lastSeq, cur));
      }
    }
  }
}

function reject(socket: Duplex, status: number, code: string, detail: string, suggestion: string): void {
  const body = JSON.stringify({ type: `/docs/errors/${code}`, title: code, status, detail, code, suggestion });
  const reason = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${status === 401 ? 'WWW-Authenticate: Bearer realm="business-platform"\r\n' : ''}Connection: close\r\n\r\n${body}`);
}

const hubs = new WeakMap<object, InventoryRealtime>();

/** The hub attached for an API's dependencies (tests tune its options). */
export function realtimeHubOf(deps: object): InventoryRealtime | undefined {
  return hubs.get(deps);
}

export function registerHub(deps: object, hub: InventoryRealtime): void {
  hubs.set(deps, hub);
}
