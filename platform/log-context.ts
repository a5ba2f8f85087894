import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What every log line written inside an API request or a Temporal activity carries, whoever writes
 * it (see `platform/logger.ts`). The request pipeline and the worker's activity interceptor enter it.
 */
export interface LogContext {
  request_id?: string;
  account_id?: string;
  /** The API key's mode: `live` or `test`. */
  mode?: 'live' | 'test';
  workflow_id?: string;
  workflow_type?: string;
  activity_type?: string;
}

const storage = new AsyncLocalStorage<LogContext>();

/** Runs `fn` (and everything it starts) with `context` added to the current one. */
export function withLogContext<T>(context: LogContext, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run(outer ? { ...outer, ...context } : { ...context }, fn);
}

/** Adds to the context of the current request or activity (for what is learnt on the way, like the account); nothing outside one. */
export function addLogContext(fields: LogContext): void {
  const current = storage.getStore();
  if (current) Object.assign(current, fields);
}

export function currentLogContext(): Readonly<LogContext> | undefined {
  return storage.getStore();
}
