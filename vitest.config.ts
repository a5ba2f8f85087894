import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/support/sequencer.ts';

/**
 * Files that need a process of their own: they install process-wide hooks before the application
 * loads (OpenTelemetry's instrumentation patches `pg` and `http` when they are first imported).
 */
const OWN_PROCESS = ['test/platform/observability.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Each file gets its own database and task queues, so files run side by side.
    maxWorkers: 3,
    fileParallelism: true,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
    // Longest files first, also on a fresh clone (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        // The files of one worker process share its modules (no isolation): the application is
        // imported once per process instead of once per file, a third of the suite's time. What a
        // file starts it stops in its afterAll (test/support/platform.ts), the Temporal client after
        // its calls in flight (platform/temporal-calls.ts), so nothing of one file reaches the next.
        test: { name: 'shared', isolate: false, include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...OWN_PROCESS] },
      },
      { extends: true, test: { name: 'own-process', isolate: true, include: OWN_PROCESS } },
    ],
  },
});
