import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** `host:port` to connect to instead of the target. */
  address: string;
  port: number;
  /**
   * The dependency goes down: open connections are destroyed, and new ones are refused
   * (`refuse`, the default: nothing listens) or accepted and never answered (`hang`: a dead host).
   * `stall`: the host stops answering without closing anything — open connections stay open and
   * carry nothing more either way (a network partition mid-query), new ones are accepted and never
   * answered; `restore` then drops the stalled connections.
   */
  cut(mode?: 'refuse' | 'hang' | 'stall'): Promise<void>;
  /** The dependency is back: new connections reach the target again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy in front of a dependency (PostgreSQL, Temporal) that a test can cut and restore. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let mode: 'up' | 'refuse' | 'hang' | 'stall' = 'up';
  const track = (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const onConnection = (client: Socket) => {
    track(client);
    if (mode !== 'up') return; // hang: accepted, never answered
    const upstream = connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream).pipe(client);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.once('close', () => {
      pairs.delete(pair);
      upstream.destroy();
    });
    upstream.once('close', () => client.destroy());
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  await listen(0);
  const port = (server.address() as { port: number }).port;
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    address: `127.0.0.1:${port}`,
    port,
    async cut(how = 'refuse') {
      mode = how;
      if (how === 'stall') {
        for (const [client, upstream] of pairs) {
          client.unpipe(upstream);
          upstream.unpipe(client);
          client.pause();
          upstream.pause();
        }
        return;
      }
      dropAll();
      if (how === 'refuse') await stop();
    },
    async restore() {
      if (mode === 'stall') dropAll();
      if (mode === 'refuse') {
        server = createServer(onConnection);
        await listen(port);
      }
      mode = 'up';
    },
    async close() {
      dropAll();
      if (server.listening) await stop();
    },
  };
}
