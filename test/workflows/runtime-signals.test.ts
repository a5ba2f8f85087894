import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const workerModule = fileURLToPath(new URL('../../worker/worker.ts', import.meta.url));
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGQUIT', 'SIGUSR2'];

/**
 * A process of its own (the SDK's runtime is one per process): it installs the runtime as the
 * workers do, prints the listeners of the signals the SDK listens to by default, then sends itself
 * SIGUSR2 and says so if it is still running a second later.
 */
const CHILD = `
import { installRuntime } from ${JSON.stringify(workerModule)};
const count = () => ${JSON.stringify(SIGNALS)}.map((signal) => process.listenerCount(signal));
const before = count();
installRuntime('warn', undefined);
process.stdout.write(JSON.stringify({ before, after: count() }) + '\\n');
process.kill(process.pid, 'SIGUSR2');
setTimeout(() => process.stdout.write(JSON.stringify({ survived: true }) + '\\n'), 1000);
`;

describe("the Temporal SDK's runtime and process signals (worker/worker.ts)", () => {
  it('installs no signal handlers of its own: SIGUSR2 ends the process instead of stopping its workers behind its back', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; });
    const [code, signal] = await once(child, 'exit') as [number | null, NodeJS.Signals | null];
    const lines = output.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({ before: [0, 0, 0, 0], after: [0, 0, 0, 0] });
    expect(lines).toHaveLength(1); // not { survived: true }
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGUSR2' });
  }, 30_000);
});
