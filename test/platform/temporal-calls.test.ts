import { createServer } from 'node:net';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import { Connection } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { toApiError } from '../../api/http/problems.ts';
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

/** A gRPC server whose every GetSystemInfo answers RESOURCE_EXHAUSTED (a Temporal over its capacity), counting the attempts. */
async function exhaustedServer(): Promise<{ address: string; attempts: () => number; stop: () => void }> {
  let attempts = 0;
  const server = new Server();
  server.register(
    '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo',
    (_call: unknown, callback: (err: { code: number; details: string }) => void) => {
      attempts++;
      callback({ code: status.RESOURCE_EXHAUSTED, details: 'namespace rate limit exceeded' });
    },
    (value: Buffer) => value, (value: Buffer) => value, 'unary',
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))));
  return { address: `127.0.0.1:${port}`, attempts: () => attempts, stop: () => server.forceShutdown() };
}

describe('retries of a call with a deadline', () => {
  it('retries while an attempt can still start before the deadline, then ends with the server\'s own status, which the API answers with 503', async () => {
    const server = await exhaustedServer();
    const calls = trackedCalls();
    const connection = Connection.lazy({ address: server.address, interceptors: calls.interceptors });
    try {
      const started = Date.now();
      const deadline = started + 3000;
      const outcome = await connection.withDeadline(deadline, () => connection.workflowService.getSystemInfo({})).then(
        () => ({ code: 0, error: undefined }),
        (err: { code?: number }) => ({ code: err.code, error: err }),
      );
      const ended = Date.now();
      // The SDK's backoff after RESOURCE_EXHAUSTED: 1.36–2.04 s, then 2.31–3.47 s. The first pause
      // fits in the 3 s; the second would end past the deadline, so it is not waited for.
      expect(server.attempts()).toBe(2);
      expect(outcome.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(ended).toBeLessThan(deadline); // it used to sleep the second pause, then fail with DEADLINE_EXCEEDED after it
      // A Temporal over its capacity is a dependency that cannot serve now: 503 with Retry-After, not a 500.
      const problem = toApiError(outcome.error);
      expect({ status: problem.status, code: problem.code, retryAfter: Number(problem.headers?.['Retry-After'] ?? 0) > 0 })
        .toEqual({ status: 503, code: 'service_unavailable', retryAfter: true });
    } finally {
      await calls.close(100, () => connection.close());
      server.stop();
    }
  });
});
