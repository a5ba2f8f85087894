import type { Pool, PoolClient } from 'pg';
import { LIVENESS_LOCK_CLASS } from './store.ts';

const RECONNECT_MS = 1000;

export interface InstanceLock {
  close(): Promise<void>;
}

/**
 * Holds this API instance's liveness lock: a session-level advisory lock
 * `(LIVENESS_LOCK_CLASS, hashtext(instanceId))` on a connection of its own. PostgreSQL releases it
 * the moment that connection ends, so when the process dies (even by SIGKILL) other instances see
 * at once that its idempotency claims have no owner and take them over. A lost connection is
 * re-established every second; meanwhile this instance's claims may be taken over, which is safe
 * because a retry reaches the same resource (its id is stored with the claim).
 */
export async function holdInstanceLock(pool: Pool, instanceId: string, onError: (err: Error) => void): Promise<InstanceLock> {
  let client: PoolClient | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  const connect = async (): Promise<void> => {
    // A connection of the pool's (its settings, credentials included), kept for as long as the
    // instance lives: it is never handed back, so the lock lives and dies with it.
    const c = await pool.connect();
    let lost = false;
    const onLost = (): void => {
      if (lost) return;
      lost = true;
      c.release(true);
      if (client !== c || closed) return;
      client = null;
      retry();
    };
    c.on('error', onLost);
    c.once('end', onLost);
    try {
      await c.query('select pg_advisory_lock($1, hashtext($2))', [LIVENESS_LOCK_CLASS, instanceId]);
    } catch (err) {
      onLost();
      throw err;
    }
    if (closed) {
      lost = true;
      c.release(true);
      return;
    }
    client = c;
  };
  const retry = (): void => {
    timer = setTimeout(() => {
      timer = null;
      connect().catch((err: Error) => {
        onError(err);
        if (!closed) retry();
      });
    }, RECONNECT_MS).unref();
  };
  await connect();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      if (c) {
        c.removeAllListeners('error');
        c.removeAllListeners('end');
        c.release(true); // ends the session, and the lock with it
      }
    },
  };
}
