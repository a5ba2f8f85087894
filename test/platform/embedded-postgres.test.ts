import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decideLeftover, waitUntilReady } from '../../platform/embedded-postgres.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-embedded-pg-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a leftover postmaster.pid', () => {
  const pidFile = (pid: number | string) => `${pid}\n/data/postgres\n1700000000\n5433\n`;
  const probe = (alive: boolean, command: string | undefined) => ({ alive: () => alive, command: () => command });

  it('signals the pid only when it is a running postgres process', () => {
    expect(decideLeftover(pidFile(4242), probe(true, 'postgres'))).toEqual({ action: 'signal', pid: 4242 });
  });

  it('removes the file without signalling when the pid is dead or belongs to another program', () => {
    expect(decideLeftover(pidFile(4242), probe(false, 'postgres'))).toMatchObject({ action: 'remove', reason: expect.stringContaining('not running') });
    expect(decideLeftover(pidFile(4242), probe(true, 'bash'))).toMatchObject({ action: 'remove', reason: expect.stringContaining('"bash", not PostgreSQL') });
    expect(decideLeftover(pidFile(4242), probe(true, ''))).toMatchObject({ action: 'remove' });
    expect(decideLeftover('garbage\n', probe(true, 'postgres'))).toMatchObject({ action: 'remove' });
    expect(decideLeftover(pidFile(process.pid), probe(true, 'postgres'))).toMatchObject({ action: 'remove' });
  });

  it('signals nothing and reports the stale file where there is no /proc to check the process', () => {
    expect(decideLeftover(pidFile(4242), probe(true, undefined))).toMatchObject({ action: 'refuse', reason: expect.stringContaining('no /proc') });
    expect(decideLeftover(pidFile(4242), probe(false, undefined))).toMatchObject({ action: 'remove' });
  });
});

describe('waiting for the server to be ready', () => {
  const node = (script: string) => spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });

  it('resolves on "ready to accept connections" and keeps the output in the log file', async () => {
    const logFile = join(dir, 'ready.log');
    const child = node(`process.stderr.write('LOG:  database system is ready to accept connections\\n'); setInterval(() => {}, 1e6);`);
    try {
      await waitUntilReady(child, { timeoutMs: 30_000, logFile });
      expect(readFileSync(logFile, 'utf8')).toContain('ready to accept connections');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('gives up after the timeout, stops the process and names the log file', async () => {
    const logFile = join(dir, 'slow.log');
    const child = node(`process.stderr.write('LOG:  redo starts\\n'); setInterval(() => {}, 1e6);`);
    const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    await expect(waitUntilReady(child, { timeoutMs: 1000, logFile })).rejects.toThrow(new RegExp(`not ready after 1 s and was stopped; its output is in ${logFile}`));
    expect(await exited).toBe('SIGKILL');
  });

  it('rejects when the server exits first, with its last output', async () => {
    const logFile = join(dir, 'fatal.log');
    const child = node(`process.stderr.write('FATAL:  lock file "postmaster.pid" already exists\\n'); process.exit(1);`);
    await expect(waitUntilReady(child, { timeoutMs: 30_000, logFile })).rejects.toThrow(/exited \(code 1\) before it was ready; its output is in .*fatal\.log:\n.*lock file/);
  });

  it('rejects when the binary cannot be spawned', async () => {
    const child = spawn(join(dir, 'no-such-postgres'), [], { stdio: ['ignore', 'ignore', 'pipe'] });
    await expect(waitUntilReady(child, { timeoutMs: 30_000, logFile: join(dir, 'missing.log') })).rejects.toThrow(/could not be started \(spawn .*ENOENT\)/);
  });
});
