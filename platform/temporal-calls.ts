import { InterceptingCall, Metadata, status, type Deadline, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type GrpcRetryOptions } from '@temporalio/client';

/**
 * The gRPC interceptors of the API's Temporal connection: the SDK's retry interceptor, bounded by
 * each call's deadline (`retryWithinDeadline`), between a counter of calls in flight (outermost: a
 * call counts from its start to its final status, its retries included) and a gate (innermost) that
 * fails attempts made after the connection closed.
 *
 * Why: the retry interceptor waits between attempts on a timer. A connection closed while a call
 * waited there (a shutdown during a Temporal hiccup) made the timer's attempt throw "Channel has
 * been shut down" as an uncaught exception, long after its caller was gone. Now `close` first waits
 * (bounded) for the calls in flight, and an attempt that still comes later ends its call with
 * CANCELLED, which its caller receives as an ordinary error.
 */
export function trackedCalls(): { interceptors: Interceptor[]; close(graceMs: number, closeConnection: () => Promise<void>): Promise<void> } {
  let active = 0;
  let closed = false;
  let idle: (() => void)[] = [];

  const count: Interceptor = (options, nextCall) => new InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      active++;
      let settled = false;
      next(metadata, {
        onReceiveStatus(received, nextStatus) {
          if (!settled) {
            settled = true;
            if (--active === 0) for (const resolve of idle.splice(0)) resolve();
          }
          nextStatus(received);
        },
      });
    },
  });

  const gate: Interceptor = (options, nextCall) => (closed ? cancelledCall() : new InterceptingCall(nextCall(options)));

  return {
    interceptors: [count, retryWithinDeadline, gate],
    async close(graceMs, closeConnection) {
      if (active > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((resolve) => idle.push(resolve)),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
        ]);
        clearTimeout(timer);
        idle = [];
      }
      closed = true;
      await closeConnection();
    },
  };
}

/** Time an attempt needs at least, or it is not worth starting before the deadline. */
const MIN_ATTEMPT_MS = 50;
const SDK_RETRIES = defaultGrpcRetryOptions();

/**
 * The SDK's retries (its backoff and retryable codes), never waiting past the call's deadline. The
 * SDK's interceptor sleeps its backoff whatever the deadline (1.7 s, then 2.9 s, … after
 * RESOURCE_EXHAUSTED, "workflow is busy" or a namespace's rate limit; up to 5 s a pause), then makes
 * an attempt that fails at once with DEADLINE_EXCEEDED: an API request whose Temporal deadline is
 * 4 s answered its 503 after up to 5.5 s. Now an attempt that could only start after the deadline is
 * not waited for: the call ends at once with the last attempt's own status.
 */
const retryWithinDeadline: Interceptor = (options, nextCall) => makeGrpcRetryInterceptor(retryOptionsUntil(options.deadline))(options, nextCall);

function retryOptionsUntil(deadline: Deadline | undefined): GrpcRetryOptions {
  const endsAt = deadline === undefined ? Infinity : deadline instanceof Date ? deadline.getTime() : deadline;
  // The SDK asks whether to retry, then how long to wait; the wait (jittered) is drawn once, here.
  let wait = 0;
  return {
    retryableDecider(attempt, status) {
      if (!SDK_RETRIES.retryableDecider(attempt, status)) return false;
      wait = SDK_RETRIES.delayFunction(attempt, status);
      return Date.now() + wait + MIN_ATTEMPT_MS < endsAt;
    },
    delayFunction: () => wait,
  };
}

/** A call that never reaches the network and ends at once with CANCELLED. */
function cancelledCall(): InterceptingCall {
  const nowhere: ConstructorParameters<typeof InterceptingCall>[0] = {
    cancelWithStatus: () => undefined, getPeer: () => '', start: () => undefined, sendMessageWithContext: () => undefined,
    sendMessage: () => undefined, startRead: () => undefined, halfClose: () => undefined, getAuthContext: () => null,
  };
  return new InterceptingCall(nowhere, {
    start(_metadata, listener) {
      process.nextTick(() => listener.onReceiveStatus({ code: status.CANCELLED, details: 'The Temporal connection is closed', metadata: new Metadata() }));
    },
    sendMessage: () => undefined,
    halfClose: () => undefined,
  });
}
