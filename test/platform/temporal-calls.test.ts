import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { trackedCalls } from '../../platform/temporal-calls.ts';

// A port where nothing listens: every attempt fails with UNAVAILABLE, which the SDK's retry
// interceptor retries after a pause — the window in which a connection used to be closed under it.
async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

const uncaught: unknown[] = [];
const record = (err: unknown) => uncaught.push(err);
afterEach(() => {
  process.off('uncaughtException', record);
});

describe('closing the Temporal connection with calls in flight', () => {
  it('waits for a call between retries, then fails its next attempt with CANCELLED instead of throwing from a timer', async () => {
    process.on('uncaughtException', record);
    const calls = trackedCalls();
    const connection = Connection.lazy({ address: await deadAddress(), connectTimeout: '1s', interceptors: calls.interceptors });
    const call = connection.workflowService.getSystemInfo({}).then(
      () => ({ ok: true as const }),
      (err: { code?: number; details?: string }) => ({ ok: false as const, code: err.code, details: err.details }),
    );
    // Let the first attempt fail and the retry timer start.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const closing = performance.now();
    await calls.close(300, () => connection.close());
    const waited = performance.now() - closing;

    const outcome = await call;
    expect(outcome).toEqual({ ok: false, code: 1, details: 'The Temporal connection is closed' }); // 1: CANCELLED
    expect(waited).toBeGreaterThanOrEqual(250); // it waited for the call (up to its grace) before closing
    // Every retry timer the SDK could still have pending has fired by now (its backoff tops out at 5 s,
    // but the gate answers the first attempt after the close, which ends the call's retries).
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(uncaught).toEqual([]);
  });

  it('closes at once when no call is in flight', async () => {
    const calls = trackedCalls();
    const connection = Connection.lazy({ address: await deadAddress(), interceptors: calls.interceptors });
    const closing = performance.now();
    await calls.close(5000, () => connection.close());
    expect(performance.now() - closing).toBeLessThan(1000);
  });
});
