import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { RenderJob } from './render-thread.ts';

export type { RenderJob };

/**
 * The thread's heap: a young generation of 8 MB (the default is several times that) makes V8
 * collect the renderers' short-lived garbage early; 256 MB of old generation is far more than a
 * render keeps (one page of rows, the layout state) and stops a runaway render before the process.
 */
const RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 };

/** The thread's module: the `.ts` source, or its compiled `.js` under dist/. */
const THREAD_MODULE = (() => {
  const path = fileURLToPath(new URL('./render-thread.ts', import.meta.url));
  return existsSync(path) ? path : path.replace(/\.ts$/, '.js');
})();

export interface RenderCallbacks {
  progress(rows: number, total: number): Promise<void>;
  /** The sandbox hold was reached: resolve to let the render carry on. */
  held(): Promise<void>;
}

/** Renders `job` in a worker thread (render-thread.ts); an abort terminates the thread. Resolves with the rows written. */
export function renderInThread(job: RenderJob, signal: AbortSignal, on: RenderCallbacks): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const worker = new Worker(THREAD_MODULE, { workerData: job, resourceLimits: RESOURCE_LIMITS });
    let settled = false;
    let chain = Promise.resolve();
    let doneRows: number | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', abort);
      fn();
    };
    const abort = () => {
      void worker.terminate();
      finish(() => reject(signal.reason instanceof Error ? signal.reason : new Error('render aborted')));
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    worker.on('message', (m: { total?: number; progress?: number; held?: number; done?: number }) => {
      // Progress is recorded in order; the result waits for the last record.
      if (m.progress !== undefined) chain = chain.then(() => on.progress(m.progress!, m.total ?? 0)).catch(() => undefined);
      if (m.held !== undefined) chain = chain.then(() => on.held()).then(() => { if (!settled) worker.postMessage('resume'); });
      if (m.done !== undefined) doneRows = m.done;
    });
    worker.on('error', (err) => finish(() => reject(err)));
    worker.on('exit', (code) => {
      const rows = doneRows;
      if (rows !== undefined && code === 0) void chain.then(() => finish(() => resolve(rows)));
      else finish(() => reject(new Error(`the render thread exited (${code}) before it finished`)));
    });
  });
}
