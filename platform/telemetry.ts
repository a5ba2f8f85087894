/**
 * OpenTelemetry tracing: one trace from the HTTP request through the Temporal client, the workflow
 * and its activities down to the PostgreSQL queries. Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set — then spans are exported with OTLP over HTTP — or a
 * test passes its own span processor. Off, every span is OpenTelemetry's no-op span.
 *
 * The `pg` instrumentation patches the module when it is first loaded, so `startTelemetry` must run
 * before anything imports `pg` (or the ORM): entry points import `platform/telemetry-init.ts` first.
 *
 * The pieces: the HTTP server span (`httpServerSpan`, api/app.ts), the Temporal client interceptor
 * (platform/temporal-interceptors.ts), the workflow interceptors and the activity interceptors with
 * the workflow span exporter sink (worker/worker.ts), and the `pg` instrumentation here.
 */
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Telemetry {
  resource: Resource;
  /** Where every span ends, the workflows' included (worker/worker.ts gives it to their exporter sink). */
  spanProcessor: SpanProcessor;
  shutdown(): Promise<void>;
}

let active: Telemetry | undefined;

/** Whether the environment asks for traces to be exported. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts tracing for this process (once; later calls return the first). Without a span processor
 * and without an OTLP endpoint in the environment it does nothing and returns undefined.
 */
export function startTelemetry(opts: { serviceName?: string; spanProcessor?: SpanProcessor } = {}): Telemetry | undefined {
  if (active) return active;
  if (!opts.spanProcessor && !tracingConfigured()) return undefined;
  const resource = new Resource({ 'service.name': opts.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'business-platform' });
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and _HEADERS itself.
  const spanProcessor = opts.spanProcessor ?? new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  // Only queries made inside a traced operation: the pool's own housekeeping would be noise.
  registerInstrumentations({ instrumentations: [new PgInstrumentation({ requireParentSpan: true })] });
  active = { resource, spanProcessor, shutdown: () => provider.shutdown() };
  return active;
}

export function activeTelemetry(): Telemetry | undefined {
  return active;
}

/** The span processor workflows export through: the active one, or one that drops everything. */
export function workflowSpanProcessor(): SpanProcessor {
  return active?.spanProcessor ?? new NoopSpanProcessor();
}

/** The trace id of the active span, for log lines (undefined when not tracing). */
export function currentTraceId(): string | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

const tracer = trace.getTracer('business-platform');

/** The server span of one HTTP request (see `httpServerSpan`). */
export interface ServerSpan {
  /** Runs `fn` (and everything it starts) inside the span. */
  run<T>(fn: () => T): T;
  /** Names the span after the route template (when one matched) and ends it. */
  finish(status: number, route: string | undefined): void;
}

/** Starts the server span of one HTTP request, continuing the caller's trace (`traceparent`). */
export function httpServerSpan(method: string, headers: Record<string, string | string[] | undefined>): ServerSpan {
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
  const inside = trace.setSpan(parent, span);
  return {
    run: (fn) => context.with(inside, fn),
    finish(status, route) {
      if (!span.isRecording()) return;
      if (route) {
        span.updateName(`${method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
