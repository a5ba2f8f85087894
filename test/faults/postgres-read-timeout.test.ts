import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { clientWithReadTimeout } from '../../db/read-timeout.ts';

/** The read timeout of the ORM's connections (db/read-timeout.ts), on a pool of one connection with a short bound. */
describe('database read timeout', () => {
  let pool: pg.Pool;
  const connectionErrors: string[] = [];
  const open = (readTimeoutMs: number) => {
    pool = new pg.Pool({ connectionString: inject('adminDbUrl'), max: 1, Client: clientWithReadTimeout(readTimeoutMs) });
    // As the ORM does (MikroORM's handlePoolErrors): a connection's error is logged, not thrown.
    pool.on('connect', (client) => client.on('error', (err) => connectionErrors.push(err.message)));
  };
  const backend = async () => (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  afterEach(() => pool.end());

  it('gives up on a query that gets no answer in time, and the pool goes on with a new connection', async () => {
    open(300);
    const before = await backend();
    // Answered after 3 s, far past the bound: the client does not wait for it.
    await expect(pool.query('select pg_sleep(3)')).rejects.toThrow('Query read timeout');
    expect(connectionErrors).toContain('Query read timeout');
    const after = await backend();
    expect(after).not.toBe(before);
    expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });

  it('never cuts a connection whose queries are answered in time, however long it lives', async () => {
    open(300);
    connectionErrors.length = 0;
    const client = await pool.connect();
    try {
      const pid = async () => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const first = await pid();
      // A second of queries on one connection, each answered within the bound, failures included.
      for (let i = 0; i < 20; i++) {
        await client.query('select pg_sleep(0.05)');
        if (i % 5 === 0) await expect(client.query('select 1 / 0')).rejects.toThrow('division by zero');
      }
      // Queued on the connection together: each is due its bound after it was sent.
      await Promise.all([client.query('select pg_sleep(0.1)'), client.query('select pg_sleep(0.1)'), client.query('select pg_sleep(0.05)')]);
      expect(await pid()).toBe(first);
    } finally {
      client.release();
    }
    expect(connectionErrors).toEqual([]);
  });

  it('counts the queries sent before the connection is ready from their own sending, not the start-up', async () => {
    open(300); // for afterEach
    const Client = clientWithReadTimeout(300);
    const client = new Client({ connectionString: inject('adminDbUrl') });
    client.on('error', (err) => connectionErrors.push(err.message));
    const connected = client.connect();
    const quick = client.query('select 1 as one');
    const slow = client.query('select pg_sleep(3)');
    await connected;
    expect((await quick).rows).toEqual([{ one: 1 }]);
    await expect(slow).rejects.toThrow('Query read timeout');
    await client.end().catch(() => undefined);
  });
});
