import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { TestPlatform } from './platform.ts';

/** A worker process made ready ahead of time; it polls only once `start` is called. */
export interface StandbyWorker {
  process: ChildProcess;
  /** Lets it poll; resolves once it does. */
  start(): Promise<ChildProcess>;
}

/**
 * Workers in child processes a test can SIGKILL (no graceful shutdown, no chance to report an
 * activity), on the platform's database and task queues. A replacement can be prepared while the
 * test runs (`standby`), so taking over after a kill does not wait for a process to start.
 */
export function workerProcesses(platform: () => TestPlatform, env: Record<string, string> = {}) {
  const children: ChildProcess[] = [];

  function spawnWorker(extraEnv: Record<string, string>): { child: ChildProcess; ready: Promise<void> } {
    const p = platform();
    const child = spawn(process.execPath, [fileURLToPath(new URL('./worker-process.ts', import.meta.url))], {
      env: {
        ...process.env, DATABASE_URL: p.dbUrl, TEMPORAL_ADDRESS: p.config.TEMPORAL_ADDRESS, TASK_QUEUE_PREFIX: p.taskQueuePrefix,
        TEMPORAL_TASK_QUEUES: p.config.TEMPORAL_TASK_QUEUES,
        BUNDLE_PATH: inject('bundlePath'), LOG_LEVEL: 'warn',
        // The workflows a killed worker had cached move to another worker after 2 s, not 10.
        TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: '2000', ...env, ...extraEnv,
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(child);
    const ready = new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('"ready":true')) resolve();
      });
      child.once('exit', (code, signal) => reject(new Error(`worker process exited (${code ?? signal}) before it polled`)));
    });
    // A standby that is never started must not fail the run when it is killed at the end.
    ready.catch(() => undefined);
    return { child, ready };
  }

  /** SIGKILLs one and resolves once it is gone. */
  async function kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  return {
    /** Starts one and resolves once it polls. */
    async start(extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
      const { child, ready } = spawnWorker(extraEnv);
      await ready;
      return child;
    },
    /** Starts one that gets ready but does not poll until `start()`. */
    standby(extraEnv: Record<string, string> = {}): StandbyWorker {
      const { child, ready } = spawnWorker({ ...extraEnv, WORKER_STANDBY: '1' });
      return {
        process: child,
        async start() {
          child.stdin!.write('go\n');
          await ready;
          return child;
        },
      };
    },
    kill,
    /** SIGKILLs every one still running; resolves once they are gone (so none polls a test that follows). */
    async killAll(): Promise<void> {
      await Promise.all(children.map(kill));
    },
  };
}
