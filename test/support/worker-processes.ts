import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { TestPlatform } from './platform.ts';

/**
 * Workers in child processes a test can SIGKILL (no graceful shutdown, no chance to report an
 * activity), on the platform's database and task queues.
 */
export function workerProcesses(platform: () => TestPlatform, env: Record<string, string> = {}) {
  const children: ChildProcess[] = [];
  return {
    /** Starts one and resolves once it polls. */
    async start(): Promise<ChildProcess> {
      const p = platform();
      const child = spawn(process.execPath, [fileURLToPath(new URL('./worker-process.ts', import.meta.url))], {
        env: {
          ...process.env, DATABASE_URL: p.dbUrl, TEMPORAL_ADDRESS: p.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: p.taskQueuePrefix,
          BUNDLE_PATH: inject('bundlePath'), LOG_LEVEL: 'warn', ...env,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('"ready":true')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
      });
      return child;
    },
    killAll(): void {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    },
  };
}
