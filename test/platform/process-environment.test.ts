import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

/** glibc's malloc settings the project's processes get (scripts/node24.sh, the Dockerfile; docs/benchmarks.md, "glibc's malloc"). */
const MALLOC = { MALLOC_ARENA_MAX: '2' };
/** Also read: the thresholds for large blocks, left to the operator (not set by the project). */
const names = [...Object.keys(MALLOC), 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_'];
const UNSET = { MALLOC_MMAP_THRESHOLD_: 'unset', MALLOC_TRIM_THRESHOLD_: 'unset' };

/** What `scripts/node24.sh` (every npm script: start, start:api, start:worker, test, bench) hands the command it runs. */
async function mallocSettingsOf(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const print = `console.log(JSON.stringify(Object.fromEntries(${JSON.stringify(names)}.map((n) => [n, process.env[n] ?? 'unset']))))`;
  const { stdout } = await exec(join(root, 'scripts/node24.sh'), ['node', '-e', print], { env, cwd: root });
  return JSON.parse(stdout) as Record<string, string>;
}

describe('the processes the project starts', () => {
  const withoutThem = Object.fromEntries(Object.entries(process.env).filter(([name]) => !names.includes(name)));

  it("run with glibc's malloc limited to two arenas, unless the operator chose a number, and pass the operator's thresholds on", async () => {
    expect(await mallocSettingsOf(withoutThem)).toEqual({ ...MALLOC, ...UNSET });
    expect(await mallocSettingsOf({ ...withoutThem, MALLOC_ARENA_MAX: '8' })).toEqual({ ...UNSET, MALLOC_ARENA_MAX: '8' });
    expect(await mallocSettingsOf({ ...withoutThem, MALLOC_MMAP_THRESHOLD_: '131072' })).toEqual({ ...MALLOC, ...UNSET, MALLOC_MMAP_THRESHOLD_: '131072' });
  });

  it('and the image sets the same for its api, worker and migrate services', () => {
    const runtimeStage = readFileSync(join(root, 'Dockerfile'), 'utf8').split(/^FROM /m).at(-1)!;
    expect(runtimeStage).toMatch(/^ENV MALLOC_ARENA_MAX=2$/m);
  });
});
