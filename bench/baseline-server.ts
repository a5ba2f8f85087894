/**
 * The baseline for the pipeline benchmark: raw `node:http` + `pg` answering the same SELECT the
 * platform runs for GET /v3/customers/{id}, with nothing else (no auth, limits, logging).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const accountId = process.env.BENCH_ACCOUNT_ID!;

const server = createServer(async (req, res) => {
  const id = req.url!.split('/').pop();
  const { rows } = await pool.query({
    name: 'get_customer',
    text: 'select * from customers where id = $1 and account_id = $2 and livemode = false',
    values: [id, accountId],
  });
  if (!rows[0]) {
    res.writeHead(404).end();
    return;
  }
  const body = JSON.stringify({ ...rows[0], object: 'customer' });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
