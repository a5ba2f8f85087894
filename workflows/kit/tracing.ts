/**
 * The workflows' interceptors (worker/worker.ts bundles this module): OpenTelemetry's workflow
 * interceptors, for a workflow whose start carried a trace context — the API's or a traced parent's
 * (platform/telemetry.ts: tracing is on when an OTLP endpoint is configured). Any other workflow
 * (tracing off, schedules, children of untraced workflows) runs without them and without loading
 * OpenTelemetry at all: its spans would go nowhere, and loading the modules (each workflow gets its
 * own copy) and making the spans took about a third of the workflow thread's time under load
 * (docs/benchmarks.md, target 2).
 *
 * Whether a workflow is traced is decided by its start's headers, so a replay decides the same; the
 * interceptors add no commands and no yields (SDK flag `OpenTelemetryInterceporsAvoidsExtraYields`,
 * set in every history this project records), so a history replays whichever way it was recorded.
 * Pure: runs in the workflow sandbox.
 */
import {
  defaultPayloadConverter, type Payload, type WorkflowInboundCallsInterceptor, type WorkflowInterceptorsFactory,
  type WorkflowInternalsInterceptor, type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type * as OpenTelemetryWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';

/** Webpack's `require` in the workflow bundle: loads a module when first called, not when this one is. */
declare const require: (id: string) => unknown;

/** Where the client interceptor puts the trace context (`TRACE_HEADER` of @temporalio/interceptors-opentelemetry). */
const TRACE_HEADER = '_tracer-data';

/** Whether the headers carry a trace context (the propagator wrote something into the carrier). */
function carriesTraceContext(headers: Record<string, Payload>): boolean {
  const encoded = headers[TRACE_HEADER];
  if (!encoded) return false;
  const carrier: unknown = defaultPayloadConverter.fromPayload(encoded);
  return typeof carrier === 'object' && carrier !== null && Object.keys(carrier).length > 0;
}

type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/** An interceptor whose methods pass each call to `current()` when there is one (a traced workflow), else straight on. */
function whenTraced<T extends object>(methods: readonly (keyof T & string)[], current: () => T | undefined): T {
  const delegating: Record<string, Method> = {};
  for (const name of methods) {
    delegating[name] = (input, next) => {
      const target = current() as Record<string, Method | undefined> | undefined;
      const real = target?.[name];
      return real ? real.call(target, input, next) : next(input);
    };
  }
  return delegating as T;
}

const INBOUND = ['handleSignal', 'handleUpdate', 'validateUpdate', 'handleQuery'] as const;
const OUTBOUND = [
  'scheduleActivity', 'scheduleLocalActivity', 'startNexusOperation', 'startChildWorkflowExecution', 'continueAsNew', 'signalWorkflow',
  'getLogAttributes', 'getMetricTags',
] as const;
const INTERNALS = ['dispose'] as const;

interface Traced {
  inbound: WorkflowInboundCallsInterceptor;
  outbound: WorkflowOutboundCallsInterceptor;
  internals: WorkflowInternalsInterceptor;
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  // Made at the start (the first call into a workflow, also in a replay), only when traced.
  let traced: Traced | undefined;
  const inbound = whenTraced<WorkflowInboundCallsInterceptor>(INBOUND, () => traced?.inbound);
  inbound.execute = (input, next) => {
    if (!carriesTraceContext(input.headers)) return next(input);
    const otel = require('@temporalio/interceptors-opentelemetry/lib/workflow/index.js') as typeof OpenTelemetryWorkflow;
    traced = {
      inbound: new otel.OpenTelemetryInboundInterceptor(),
      outbound: new otel.OpenTelemetryOutboundInterceptor(),
      internals: new otel.OpenTelemetryInternalsInterceptor(),
    };
    return traced.inbound.execute!(input, next);
  };
  return {
    inbound: [inbound],
    outbound: [whenTraced<WorkflowOutboundCallsInterceptor>(OUTBOUND, () => traced?.outbound)],
    internals: [whenTraced<WorkflowInternalsInterceptor>(INTERNALS, () => traced?.internals)],
  };
};
