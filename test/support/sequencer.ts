import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, so that no long file starts last while the other workers have run out of
 * files. Vitest orders by the durations of the last run on this machine (its cache, under
 * node_modules); a fresh clone — CI — has none, and vitest would then order by file size, which
 * puts the short files that spawn processes (the CLI, `npm start`, the worker-crash tests), among
 * the longest to run, at the end. `test/durations.json` keeps the durations of a full run for that
 * case (regenerate it with `node scripts/test-durations.ts` after a run); a file it does not know
 * yet runs first.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const known = JSON.parse(readFileSync(new URL('../durations.json', import.meta.url), 'utf8')) as Record<string, number>;
    const root = this.ctx.config.root;
    const duration = (spec: TestSpecification): number =>
      this.ctx.cache.getTestSpecificationResult(spec)?.duration ?? (known[relative(root, spec.moduleId)] ?? Infinity) * 1000;
    return [...files].sort((a, b) => {
      // Projects with isolated files first, as vitest does.
      if (a.project.config.isolate !== b.project.config.isolate) return a.project.config.isolate ? -1 : 1;
      return duration(b) - duration(a);
    });
  }
}
