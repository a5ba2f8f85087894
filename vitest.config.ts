import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Each file gets its own database and task queues, so files run side by side. Files keep their
    // own module instances (isolate): with shared ones a closed Temporal client's retry timer from
    // one file surfaced as an uncaught error in the next (see docs/architecture.md, tests).
    maxWorkers: 3,
    fileParallelism: true,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
  },
});
