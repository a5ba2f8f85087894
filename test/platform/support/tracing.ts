/**
 * Tracing for a test file, into memory. Import it before anything else in the file: the `pg`
 * instrumentation patches the module when it is first loaded (see platform/telemetry.ts).
 */
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTelemetry } from '../../../platform/telemetry.ts';

export const spanExporter = new InMemorySpanExporter();
startTelemetry({ serviceName: 'business-platform-test', spanProcessor: new SimpleSpanProcessor(spanExporter) });
