import { inject } from 'vitest';
import type { Config } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { startWorkers } from '../../worker/worker.ts';
import type { TestPlatform } from './platform.ts';

/**
 * Runs `run` against workers of their own — the platform area's, on task queues named after `name`,
 * with `code` (a bundle holding test-only workflows, test/support/workflows) and `config`'s settings
 * over the platform's — and shuts them down afterwards. `run` gets the task queue to start on.
 */
export async function withTestWorkers<T>(
  platform: TestPlatform, code: string, name: string, config: Partial<Config>, run: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueuePrefix = `${platform.taskQueuePrefix}${name}-`;
  const workers = await startWorkers({
    address: inject('temporalAddress'), namespace: platform.config.TEMPORAL_NAMESPACE, taskQueuePrefix, orm: platform.orm,
    logger: createLogger('error'), bundle: { code }, areas: ['platform'],
    config: { ...platform.config, ...config },
    shutdownTimes: { graceMs: 100, forceMs: 1000 },
  });
  try {
    return await run(`${taskQueuePrefix}platform`);
  } finally {
    await workers.shutdown();
  }
}
