import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestPlatform } from './platform.ts';

/**
 * APIs in child processes of their own (test/support/api-process.ts) on the platform's database and
 * task queues: replicas that share nothing with the test process but PostgreSQL and Temporal.
 */
export function apiProcesses(platform: () => TestPlatform) {
  const children: ChildProcess[] = [];
  return {
    /** Starts one and resolves with its url once it listens. */
    async start(env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
      const p = platform();
      const child = spawn(process.execPath, [fileURLToPath(new URL('./api-process.ts', import.meta.url))], {
        env: {
          ...process.env, DATABASE_URL: p.dbUrl, TEMPORAL_ADDRESS: p.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: p.taskQueuePrefix,
          TEMPORAL_TASK_QUEUES: p.config.TEMPORAL_TASK_QUEUES, TEMPORAL_CALL_TIMEOUT_MS: String(p.config.TEMPORAL_CALL_TIMEOUT_MS), LOG_LEVEL: 'warn', ...env,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const ready = /"url":"([^"]+)"/.exec(out);
          if (ready) resolve(ready[1]!);
        });
        child.once('exit', (code, signal) => reject(new Error(`api process exited (${code ?? signal}) before it listened`)));
      });
      return { child, url };
    },
    killAll(): void {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    },
  };
}
