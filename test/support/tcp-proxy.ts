import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** `host:port` to connect to instead of the target. */
  address: string;
  port: number;
  /**
   * The dependency goes down: open connections are destroyed, and new ones are refused
   * (`refuse`, the default: nothing listens) or accepted and never answered (`hang`: a dead host).
   */
  cut(mode?: 'refuse' | 'hang'): Promise<void>;
  /** The dependency is back: new connections reach the target again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy in front of a dependency (PostgreSQL, Temporal) that a test can cut and restore. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let mode: 'up' | 'refuse' | 'hang' = 'up';
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
    client.once('close', () => upstream.destroy());
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
      dropAll();
      if (how === 'refuse') await stop();
    },
    async restore() {
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
