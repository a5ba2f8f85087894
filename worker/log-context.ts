import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { withLogContext } from '../platform/log-context.ts';

/** Activity interceptor: every line an activity logs carries its workflow id, workflow type and activity type. */
export const activityLogContext: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    execute: (input, next) => withLogContext({
      workflow_id: ctx.info.workflowExecution?.workflowId,
      workflow_type: ctx.info.workflowType,
      activity_type: ctx.info.activityType,
    }, () => next(input)),
  },
});
