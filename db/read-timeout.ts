import type { EventEmitter } from 'node:events';
import pg from 'pg';

/**
 * A `pg` client class whose queries must be answered within `readTimeoutMs` of being sent, else
 * the connection is destroyed and every query on it fails with `Query read timeout` (which the
 * API answers as 503, api/http/problems.ts): what `pg`'s own `query_timeout` is for — a database
 * host that stops answering mid-query must not hang a request — at the cost of one number per query
 * instead of a timer.
 *
 * `pg`'s `query_timeout` starts a `setTimeout` for every query, and under load that made the
 * objects of the queries (their rows, row descriptions, callbacks: about 4.5 KB a request on GET
 * /v3/customers/{id}) outlive the young generation: each scavenge promoted them to the old one,
 * where only full collections free them (docs/benchmarks.md, "Garbage collection and the request
 * log"). Here each client keeps the deadlines of its unanswered queries in order (a connection
 * answers in order, and one ReadyForQuery ends every query), and one process-wide interval looks at
 * the oldest of each client.
 *
 * Unlike `pg`'s (which fails the query and leaves its connection in the pool, still waiting for the
 * answer), the connection is destroyed: the pool replaces it. Cursors (`submit` objects) are not
 * bounded, as they may be read for as long as their reader wants.
 */
export function clientWithReadTimeout(readTimeoutMs: number): typeof pg.Client {
  class ReadTimeoutClient extends pg.Client {
    /** When each query sent and not answered yet must be answered by, oldest first. */
    readonly deadlines: number[] = [];

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // The first ReadyForQuery ends the start-up (queries sent before it wait for it); each after it ends a query.
      const connection = connectionOf(this);
      connection.once('readyForQuery', () => connection.on('readyForQuery', () => void this.deadlines.shift()));
      this.once('end', () => unwatch(this));
      watch(this);
    }
  }
  const query = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
  ReadTimeoutClient.prototype.query = function (this: ReadTimeoutClient, ...args: unknown[]) {
    const result = query.apply(this, args);
    if (typeof (args[0] as { submit?: unknown } | null)?.submit !== 'function') this.deadlines.push(Date.now() + readTimeoutMs);
    return result;
  } as typeof pg.Client.prototype.query;
  return ReadTimeoutClient;
}

interface Watched extends pg.Client {
  readonly deadlines: number[];
}

/** How often the deadlines are looked at: a query is given up between its deadline and this much later. */
const READ_TIMEOUT_CHECK_MS = 250;

const watched = new Set<Watched>();
let checking: NodeJS.Timeout | null = null;

function watch(client: Watched): void {
  watched.add(client);
  checking ??= setInterval(check, READ_TIMEOUT_CHECK_MS).unref();
}

function unwatch(client: Watched): void {
  watched.delete(client);
  if (watched.size || !checking) return;
  clearInterval(checking);
  checking = null;
}

function check(): void {
  const now = Date.now();
  for (const client of watched) {
    const due = client.deadlines[0];
    if (due === undefined || due > now) continue;
    client.deadlines.length = 0;
    unwatch(client);
    // The client fails its active and queued queries with this error, and the pool discards it.
    (connectionOf(client) as EventEmitter & { stream: { destroy(err: Error): void } }).stream.destroy(new Error('Query read timeout'));
  }
}

function connectionOf(client: pg.Client): EventEmitter {
  return (client as unknown as { connection: EventEmitter }).connection;
}
