/**
 * The baseline of the warehouses benchmark: a bare `ws` server that broadcasts a stock-change-shaped
 * message to every connected client, with no database, no authentication and no filtering. A line
 * `go <count> <interval ms>` on stdin starts the broadcast; each message carries the time it was due.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket } from 'ws';

const server = createServer();
const wss = new WebSocketServer({ server });
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, pid: process.pid }));
});
process.stdin.on('data', (chunk: Buffer) => {
  const m = /^go (\d+) (\d+)/.exec(chunk.toString());
  if (!m) return;
  const count = Number(m[1]);
  const interval = Number(m[2]);
  const t0 = Date.now();
  let i = 0;
  const tick = () => {
    if (i >= count) return;
    const seq = ++i;
    // Stamped with the time it was due (as the benchmark stamps its database changes), so a broadcast
    // that falls behind its schedule shows in the latency.
    const due = t0 + (seq - 1) * interval;
    const text = JSON.stringify({
      type: 'stock_changed', seq, warehouse_id: 'wh_bench', sku: `WS-${seq % 10}`, quantity: seq, reserved: 0, available: seq, in_transit: 0,
      change: { quantity: 1, reserved: 0, in_transit: 0 }, reason: 'stock_change', reference: String(due), occurred_at: new Date().toISOString(),
    });
    for (const c of wss.clients) if (c.readyState === WebSocket.OPEN) c.send(text);
    setTimeout(tick, Math.max(0, t0 + i * interval - Date.now()));
  };
  tick();
});
