import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadMallocTrim, trimMalloc } from '../../platform/malloc-trim.ts';

const module = fileURLToPath(new URL('../../platform/memory-release.ts', import.meta.url));

/**
 * A process of its own (malloc's arenas are the process's): it allocates ~300 MB of 1 KB buffers
 * (each its own malloc block), keeps one in 64 so that the freed ones lie between used blocks, lets
 * V8 free the rest, then starts the memory release with the trim interval given (and no idle
 * release) and prints its resident size before and 1.5 s after.
 */
const child = (trimEveryMs: number) => `
import { startMemoryRelease } from ${JSON.stringify(module)};
const logger = { info() {}, debug() {}, warn() {}, error() {}, enabled: () => true, child() { return logger; } };
const MB = 1_048_576;
const kept = [];
let freed = [];
for (let i = 0; i < 300_000; i++) (i % 64 === 0 ? kept : freed).push(Buffer.allocUnsafeSlow(1000));
freed = null;
gc();
await new Promise((resolve) => setTimeout(resolve, 200));
const before = Math.round(process.memoryUsage.rss() / MB);
const stop = startMemoryRelease({ idleMs: 0, trimEveryMs: ${trimEveryMs}, logger });
await new Promise((resolve) => setTimeout(resolve, 1500));
stop();
process.stdout.write(JSON.stringify({ before, after: Math.round(process.memoryUsage.rss() / MB), kept: kept.length }));
`;

async function run(trimEveryMs: number): Promise<{ before: number; after: number; kept: number }> {
  const proc = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', child(trimEveryMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
  const [code] = await once(proc, 'exit') as [number];
  expect(code).toBe(0);
  return JSON.parse(output) as { before: number; after: number; kept: number };
}

describe("glibc's malloc_trim (platform/malloc-trim.ts, MALLOC_TRIM_INTERVAL_MS)", () => {
  it('hands the free pages between used blocks back on its interval; without it they stay resident', async () => {
    const [trimmed, untrimmed] = await Promise.all([run(200), run(0)]);
    expect(trimmed.kept).toBe(4688);
    expect(trimmed.after).toBeLessThan(trimmed.before - 150);
    expect(untrimmed.after).toBeGreaterThan(untrimmed.before - 50);
  }, 30_000);

  it('finds malloc_trim in glibc, and answers without one where the C library has none', async () => {
    expect(typeof await trimMalloc()).toBe('boolean');
    expect(await loadMallocTrim()).not.toBeNull();
    expect(await loadMallocTrim('libc-without-malloc-trim.so')).toBeNull();
  });
});
