import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { notFound, serviceUnavailable, validationFailed, type ApiError } from '../../platform/errors.ts';
import { ACTIVITY_INTERCEPTORS } from '../../worker/worker.ts';
import { housekeepingWorkflow } from '../../workflows/platform/index.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

/**
 * The workers' activity interceptors (worker/worker.ts ACTIVITY_INTERCEPTORS) on a worker whose
 * one activity is scripted: the housekeeping workflow's `purgeExpiredRecords` (retry policy:
 * 5 attempts, 5 s apart and doubling) throws what the test says.
 */
let platform: TestPlatform;
let connection: NativeConnection;

beforeAll(async () => {
  platform = await startTestPlatform();
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // already installed in this process
  }
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await connection?.close();
  await platform?.close();
});

async function runWith(name: string, throws: (call: number) => ApiError | null) {
  let calls = 0;
  const taskQueue = `${platform.taskQueuePrefix}refusals-${name}`;
  const worker = await Worker.create({
    connection, namespace: platform.config.TEMPORAL_NAMESPACE, taskQueue,
    workflowBundle: { codePath: inject('bundlePath') },
    activities: {
      async purgeExpiredRecords() {
        calls += 1;
        const err = throws(calls);
        if (err) throw err;
        return { idempotencyRecords: 0, rateLimitWindows: 0, requestLogs: 0 };
      },
    },
    interceptors: { activity: [...ACTIVITY_INTERCEPTORS] },
  });
  const workflowId = `refusals-${name}-${Date.now()}`;
  const started = Date.now();
  const outcome = await worker.runUntil(
    platform.temporal.client.workflow.execute(housekeepingWorkflow, { taskQueue, workflowId, args: [{ requestLogRetentionDays: 30 }] })
      .then((value) => ({ value, error: undefined }), (error: unknown) => ({ value: undefined, error })),
  );
  const history = await platform.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  const attempts = (history.events ?? [])
    .filter((e) => e.activityTaskStartedEventAttributes)
    .map((e) => e.activityTaskStartedEventAttributes!.attempt);
  return { ...outcome, calls, attempts, elapsedMs: Date.now() - started };
}

describe('activity refusals (one interceptor for every area)', () => {
  it('fails the workflow at once, with the refusal, when an activity throws a 4xx ApiError: never retried', async () => {
    for (const [name, err, type] of [
      ['validation', validationFailed([{ path: 'x', message: 'is wrong' }]), 'validation_failed'],
      ['not-found', notFound('thing', 'thg_1'), 'not_found'],
    ] as const) {
      const run = await runWith(name, () => err);
      expect(run.error).toBeInstanceOf(WorkflowFailedError);
      const activity = (run.error as WorkflowFailedError).cause;
      expect(activity).toBeInstanceOf(ActivityFailure);
      const failure = (activity as ActivityFailure).cause as ApplicationFailure;
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure.type).toBe(type);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.details?.[0]).toMatchObject({ status: err.status, code: err.code });
      expect(run.calls).toBe(1);
      expect(run.attempts).toEqual([1]);
      expect(run.elapsedMs).toBeLessThan(5000); // the policy's first retry would come 5 s later
    }
  });

  it('still retries an outage (a 5xx ApiError) under the activity\'s retry policy', async () => {
    const run = await runWith('outage', (call) => (call === 1 ? serviceUnavailable('the database') : null));
    expect(run.error).toBeUndefined();
    expect(run.value).toEqual({ idempotencyRecords: 0, rateLimitWindows: 0, requestLogs: 0 });
    expect(run.calls).toBe(2);
    expect(run.attempts).toEqual([2]); // a retried activity's started event records its last attempt
  }, 30_000);
});
