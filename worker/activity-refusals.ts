import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { ApiError } from '../platform/errors.ts';
import { refusalFromProblem } from '../platform/temporal-kit.ts';

/**
 * Activity interceptor, one place for every area: a domain rule's 4xx `ApiError` (validation,
 * not found, conflict, insufficient stock …) thrown by an activity becomes a non-retryable
 * refusal (`refusalFromProblem`, a type from workflows/kit/failures.ts REFUSALS). An input the
 * domain refuses once is refused every time, so retrying it would only hold the workflow (or the
 * update waiting on it) until its retry policy ran out; the refusal fails the activity at once and
 * reaches the API as the same problem document. Outages (5xx, anything else thrown) keep their
 * retry policy.
 */
export const activityRefusals: ActivityInterceptorsFactory = () => ({
  inbound: {
    async execute(input, next) {
      try {
        return await next(input);
      } catch (err) {
        if (err instanceof ApiError && err.status < 500) throw refusalFromProblem(err);
        throw err;
      }
    },
  },
});
