import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { DestinationRefused, checkUrl, hostOf, resolveDestination, type DestinationPolicy, type ResolvedAddress, type Resolver } from './destination.ts';

/**
 * One HTTP attempt of a delivery: the destination is checked (after DNS resolution), the
 * connection goes to the checked address, redirects are not followed (a 3xx is a failure) and the
 * whole exchange is bounded by `timeoutMs`.
 */
export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  policy: DestinationPolicy;
  resolver?: Resolver;
  /** Certificate authorities trusted for https instead of the system's (a test's own CA). */
  ca?: string | Buffer;
}

/**
 * How deliveries reach a receiver, replaced only by tests (a worker's `services`): the resolver, the
 * CAs trusted for TLS and the addresses allowed whatever their class. Never read from configuration.
 */
export interface WebhookTransport {
  resolver?: Resolver;
  ca?: string | Buffer;
  allowAddresses?: readonly string[];
}

export type SendOutcome = 'delivered' | 'failed' | 'refused' | 'timeout' | 'network_error' | 'gone';

export interface SendResult {
  outcome: SendOutcome;
  httpStatus: number | null;
  responseTimeMs: number | null;
  /** From a `Retry-After` on 429, 502 or 503. */
  retryAfterMs: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

const EXCERPT_CHARS = 1000;
/** Read at most this much of a response (enough for the excerpt, small enough to keep the socket). */
const MAX_RESPONSE_BYTES = 64 * 1024;
const USER_AGENT = 'BusinessPlatform-Webhooks/3';

/**
 * Keep-alive agents, one per (scheme, host name, checked address, port): a pooled socket is always
 * connected to an address that was checked, and is only reused for the same name (TLS SNI).
 */
const agents = new Map<string, http.Agent>();
const MAX_AGENTS = 256;

function agentFor(protocol: string, host: string, address: string, port: string): http.Agent {
  const key = `${protocol}|${host}|${address}|${port}`;
  let agent = agents.get(key);
  if (agent) {
    agents.delete(key);
    agents.set(key, agent); // most recently used last
    return agent;
  }
  // `timeout` closes idle pooled sockets before the usual 5 s server keep-alive does (on a busy
  // socket it only notifies; the attempt's own timer bounds requests).
  const opts = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 4000 };
  agent = protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts);
  agents.set(key, agent);
  if (agents.size > MAX_AGENTS) {
    const [oldestKey, oldest] = agents.entries().next().value!;
    agents.delete(oldestKey);
    oldest.destroy();
  }
  return agent;
}

/** Closes every pooled connection (worker shutdown, tests). */
export function closeSenderConnections(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

function pinnedLookup(address: ResolvedAddress): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  }) as LookupFunction;
}

export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Rejects with a timeout once `ms` have passed (for the DNS part of an attempt). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

export async function sendWebhook(req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
  let url: URL;
  let addresses: ResolvedAddress[] | 'timeout';
  try {
    url = checkUrl(req.url, req.policy);
    addresses = await within(resolveDestination(url, req.policy, req.resolver), req.timeoutMs);
  } catch (err) {
    if (err instanceof DestinationRefused) {
      return { outcome: 'refused', httpStatus: null, responseTimeMs: null, retryAfterMs: null, error: `destination refused: ${err.message}`, responseExcerpt: null };
    }
    throw err;
  }
  if (addresses === 'timeout') {
    return { outcome: 'timeout', httpStatus: null, responseTimeMs: elapsed(), retryAfterMs: null, error: `DNS did not answer within ${req.timeoutMs} ms`, responseExcerpt: null };
  }
  // Prefer IPv4 when a name has both: loopback receivers in development usually listen there.
  const address = addresses.find((a) => a.family === 4) ?? addresses[0]!;
  const first = await post(req, url, address, started, false);
  // A pooled connection the receiver had just closed: try once more on a fresh one (Node's
  // documented pattern for keep-alive races; nothing was answered, so nothing was processed).
  if (first.retryOnFreshSocket) return (await post(req, url, address, started, true)).result;
  return first.result;
}

function post(req: SendRequest, url: URL, address: ResolvedAddress, started: number, fresh: boolean): Promise<{ result: SendResult; retryOnFreshSocket: boolean }> {
  const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
  const host = hostOf(url);
  const transport = url.protocol === 'https:' ? https : http;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const remainingMs = Math.max(1, req.timeoutMs - (performance.now() - started));

  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult, retryOnFreshSocket = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ result, retryOnFreshSocket });
    };
    const request = transport.request({
      protocol: url.protocol,
      hostname: host,
      port,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: fresh ? false : agentFor(url.protocol, host, address.address, port),
      lookup: pinnedLookup(address),
      servername: url.protocol === 'https:' && !/^[\d.]+$|:/.test(host) ? host : undefined,
      ...(req.ca && url.protocol === 'https:' ? { ca: req.ca } : {}),
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'content-length': String(Buffer.byteLength(req.body)),
        ...req.headers,
      },
    });
    const timer = setTimeout(() => {
      finish({
        outcome: 'timeout', httpStatus: null, responseTimeMs: elapsed(), retryAfterMs: null,
        error: `no complete answer within ${req.timeoutMs} ms`, responseExcerpt: null,
      });
      request.destroy(new Error('timeout'));
    }, remainingMs);

    request.once('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const retryAfterMs = [429, 502, 503].includes(status) ? parseRetryAfter(res.headers['retry-after']) : null;
        const ok = status >= 200 && status < 300;
        const location = status >= 300 && status < 400 && res.headers.location ? ` (redirect to ${res.headers.location} not followed)` : '';
        finish({
          outcome: ok ? 'delivered' : status === 410 ? 'gone' : 'failed',
          httpStatus: status,
          responseTimeMs: elapsed(),
          retryAfterMs,
          error: ok ? null : `receiver answered ${status}${location}`,
          responseExcerpt: text ? text.slice(0, EXCERPT_CHARS) : null,
        });
      };
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
        else {
          done();
          res.destroy();
        }
      });
      res.once('end', done);
      res.once('error', done);
    });
    request.once('error', (err: NodeJS.ErrnoException) => {
      const staleSocket = !fresh && request.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
      finish({
        outcome: 'network_error', httpStatus: null, responseTimeMs: elapsed(), retryAfterMs: null,
        error: `${err.code ?? 'error'}: ${err.message}`, responseExcerpt: null,
      }, staleSocket);
    });
    request.end(req.body);
  });
}
