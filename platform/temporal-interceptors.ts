/**
 * The Temporal client interceptors of every client this project creates (the API's, and the one on a
 * worker's connection that activities start workflows with): workflow starts counted by type
 * (`bp_workflow_starts_total`), and the trace context carried into the workflow's headers
 * (`@temporalio/interceptors-opentelemetry`; without a tracer provider its spans cost nothing).
 */
import type { ClientInterceptors, WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { workflowStarts } from './metrics.ts';

const countStarts: WorkflowClientInterceptor = {
  async startWithDetails(input, next) {
    workflowStarts.inc({ workflow_type: input.workflowType });
    return next(input);
  },
  async signalWithStart(input, next) {
    workflowStarts.inc({ workflow_type: input.workflowType });
    return next(input);
  },
  async startUpdateWithStart(input, next) {
    workflowStarts.inc({ workflow_type: input.workflowType });
    return next(input);
  },
};

export function clientInterceptors(): ClientInterceptors {
  return { workflow: [countStarts, new OpenTelemetryWorkflowClientInterceptor()] };
}
