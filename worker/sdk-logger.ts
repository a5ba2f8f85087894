import type { LogLevel as SdkLogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import type { Logger } from '../platform/logger.ts';

/** The SDK's metadata names, as the platform's log lines name the same things (worker/log-context.ts). */
const FIELD_NAMES: Record<string, string | null> = {
  sdkComponent: 'sdk_component',
  taskQueue: 'task_queue',
  workflowId: 'workflow_id',
  workflowRunId: 'run_id',
  runId: 'run_id',
  workflowType: 'workflow_type',
  activityId: 'activity_id',
  activityType: 'activity_type',
  isLocal: 'local',
  durationMs: 'duration_ms',
  // An opaque handle on the task, long and useless to a reader.
  taskToken: null,
};

const METHOD = { TRACE: 'debug', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * The Temporal SDK's logger (`Runtime.install({ logger })`): the lines of workflow code (`log` of
 * @temporalio/workflow, with the workflow's ids and, for a traced workflow, its `trace_id`), of
 * activities' `Context.log`, of the worker itself ("Activity failed", …) and of the Rust core go
 * out as the platform's JSON lines — with its level, its secret redaction and its field names —
 * instead of the SDK's own text lines on stderr.
 */
export class SdkLogAdapter implements SdkLogger {
  private readonly target: () => Logger;

  constructor(target: () => Logger) {
    this.target = target;
  }

  log(level: SdkLogLevel, message: string, meta?: LogMetadata): void {
    const target = this.target();
    const method = METHOD[level];
    // The SDK logs every activity's start and end at debug: nothing is built for a level that is off.
    if (!target.enabled(method)) return;
    const fields: Record<string, unknown> = {};
    // Symbol keys (the SDK's timestamp) are left out: the line has its own time.
    for (const [key, value] of Object.entries(meta ?? {})) {
      const name = key in FIELD_NAMES ? FIELD_NAMES[key] : key;
      if (name && value !== undefined) fields[name] = value;
    }
    target[method](message, fields);
  }

  trace(message: string, meta?: LogMetadata): void { this.log('TRACE', message, meta); }
  debug(message: string, meta?: LogMetadata): void { this.log('DEBUG', message, meta); }
  info(message: string, meta?: LogMetadata): void { this.log('INFO', message, meta); }
  warn(message: string, meta?: LogMetadata): void { this.log('WARN', message, meta); }
  error(message: string, meta?: LogMetadata): void { this.log('ERROR', message, meta); }
}
