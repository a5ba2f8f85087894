import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A real webhook receiver on loopback: it records every request and verifies each one with the
 * independent `standardwebhooks` library against every secret it is told about (all must pass).
 * What it answers is programmable per request.
 */
export interface Received {
  n: number;
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  /** null when every secret verified the request; else the first verification error. */
  verifyError: string | null;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Hold the answer until this settles (a receiver that hangs). */
  hold?: Promise<unknown>;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  secrets: string[];
  /** How the receiver answers request number `n` (1-based); default 200. */
  reply: (r: Received) => Reply;
  /** Resolves once `count` requests arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  connections: number;
  close(): Promise<void>;
}

export async function startReceiver(opts: { secrets?: string[]; path?: string } = {}): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const waiters: { count: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    secrets: opts.secrets ?? [],
    reply: () => ({ status: 200, body: 'ok' }),
    connections: 0,
    async waitFor(count, timeoutMs = 20_000) {
      if (receiver.received.length >= count) return receiver.received;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${receiver.received.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(); } });
      });
      return receiver.received;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verifyError: string | null = receiver.secrets.length ? null : 'no secret to verify with';
      for (const secret of receiver.secrets) {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
        } catch (err) {
          verifyError ??= `${(err as Error).message} (secret ${secret.slice(0, 10)}…)`;
        }
      }
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = null;
      }
      const r: Received = { n: receiver.received.length + 1, at: Date.now(), path: req.url ?? '/', headers: req.headers, body, json, verifyError };
      receiver.received.push(r);
      for (const w of [...waiters]) {
        if (receiver.received.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
      const reply = receiver.reply(r);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? '');
      };
      if (reply.hold) void reply.hold.then(send, send);
      else send();
    });
  });
  server.on('connection', (s) => {
    receiver.connections++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}${opts.path ?? '/hooks'}`;
  return receiver;
}

/** Polls `fn` until it returns a truthy value (event-driven work finishing in workflows). */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
