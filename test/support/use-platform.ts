import { afterAll, beforeAll, inject } from 'vitest';
import type { RunningApi } from '../../api/server.ts';
import { client } from './http.ts';
import { startTestPlatform, type TestPlatform, type TestPlatformOptions } from './platform.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export type Http = ReturnType<typeof client>;

/** What a test file starts from: a platform, a client of its API and a key. */
export interface PlatformContext {
  platform: TestPlatform;
  http: Http;
  key: string;
  /** The account `key` belongs to. */
  accountId: string;
}

export interface UsePlatformOptions extends TestPlatformOptions {
  /** The key belongs to a new account of its own (not the platform's default one). */
  ownAccount?: boolean;
}

/**
 * Something a test file starts once before its tests (beforeAll) and closes after them (afterAll).
 * The returned object is filled in when it has started; `ready` is called then (and awaited), to
 * assign the file's own variables (`({ platform, http, key } = t)`) or to set up more.
 */
export function useStarted<T extends { close(): Promise<void> }>(start: () => Promise<T>, ready?: (t: T) => unknown): T {
  const context = {} as T;
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
    Object.assign(context, started);
    await ready?.(context);
  });
  afterAll(() => started?.close());
  return context;
}

async function startPlatformContext(opts: UsePlatformOptions): Promise<PlatformContext & { close(): Promise<void> }> {
  const platform = await startTestPlatform(opts);
  const accountId = opts.ownAccount ? await platform.newAccount() : platform.accountId;
  return { platform, http: client(platform.url), key: await platform.newKey({ accountId }), accountId, close: () => platform.close() };
}

/**
 * Sets environment variables for this file, from now until its last afterAll: settings that areas
 * read from the environment when a platform starts (sandbox speeds, carrier endpoints). Call it
 * before usePlatform. Test files share worker processes, so a variable must not outlive its file.
 */
export function useEnv(vars: Record<string, string>): void {
  const saved = Object.entries(vars).map(([name]) => [name, process.env[name]] as const);
  Object.assign(process.env, vars);
  afterAll(() => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

/** A test platform for the file (startTestPlatform), with a client of its API and a key. */
export function usePlatform(opts: UsePlatformOptions = {}, ready?: (t: PlatformContext) => unknown): PlatformContext {
  return useStarted(() => startPlatformContext(opts), ready);
}

export interface ProxiedContext extends PlatformContext {
  /** In front of the dependency for the second API: the test cuts and restores it. */
  proxy: TcpProxy;
  /** A second API on the platform, reaching the dependency through the proxy; `http` is its client. */
  api: RunningApi;
}

/**
 * A test platform (usePlatform) with a second API whose connections to PostgreSQL or Temporal pass
 * through a TCP proxy: the test cuts it and the dependency "goes down" for that API alone (the
 * shared server keeps running for everyone else). `http` talks to the second API.
 */
export function useProxiedPlatform(
  dependency: 'postgres' | 'temporal', opts: UsePlatformOptions = {}, ready?: (t: ProxiedContext) => unknown,
): ProxiedContext {
  return useStarted(async () => {
    const t = await startPlatformContext(opts);
    let proxy: TcpProxy | undefined;
    try {
      let second: { dbUrl?: string; temporalAddress?: string };
      if (dependency === 'postgres') {
        const db = new URL(t.platform.dbUrl);
        proxy = await startTcpProxy({ host: db.hostname, port: Number(db.port || 5432) });
        db.host = proxy.address;
        second = { dbUrl: db.toString() };
      } else {
        const [host, port] = inject('temporalAddress').split(':');
        proxy = await startTcpProxy({ host: host!, port: Number(port) });
        second = { temporalAddress: proxy.address };
      }
      const api = await t.platform.startSecondApi(second);
      const through = proxy;
      return {
        ...t, proxy: through, api, http: client(api.url),
        async close() {
          await through.restore();
          await t.close();
          await through.close();
        },
      };
    } catch (err) {
      await t.close();
      await proxy?.close();
      throw err;
    }
  }, ready);
}
