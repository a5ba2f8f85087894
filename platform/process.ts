import type { Config } from './config.ts';
import type { Logger } from './logger.ts';

/** A setting a production entry point cannot run without; exits with a clear message if unset. */
export function requireSetting<K extends keyof Config>(config: Config, name: K): NonNullable<Config[K]> {
  const value = config[name];
  if (value === undefined || value === null || value === '') {
    console.error(`${String(name)} is required for this process (see the configuration table in README.md).`);
    process.exit(78);
  }
  return value as NonNullable<Config[K]>;
}

/** The ordered stop of an entry point (`onShutdown`). */
export interface Shutdown {
  /**
   * A part the process cannot do without ends when `ended` settles (the workers' `done`): if that
   * happens before a shutdown began, the process logs `what`, stops in order as on a signal, and
   * exits 1, so that its supervisor starts another instead of keeping a process that looks alive
   * and does nothing.
   */
  exitWhenEnded(ended: Promise<unknown>, what: string): void;
}

/** Runs `stop` once on SIGINT/SIGTERM (exit 0), or when a part ends on its own (exit 1); a second signal forces the exit. */
export function onShutdown(logger: Logger, stop: () => Promise<void>): Shutdown {
  let stopping = false;
  const run = (exitCode: number) => {
    stopping = true;
    stop().then(
      () => process.exit(exitCode),
      (err: unknown) => {
        logger.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn('forced exit', { signal });
      process.exit(130);
    }
    logger.info('shutting down', { signal });
    run(0);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    exitWhenEnded(ended, what) {
      const end = (error?: unknown) => {
        if (stopping) return;
        logger.error(`${what}: shutting down`, error === undefined ? {} : { error });
        run(1);
      };
      ended.then(() => end(), end);
    },
  };
}
