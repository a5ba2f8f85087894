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

/** Runs `stop` once on SIGINT/SIGTERM; a second signal forces the exit. */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn('forced exit', { signal });
      process.exit(130);
    }
    stopping = true;
    logger.info('shutting down', { signal });
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
