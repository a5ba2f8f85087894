import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const dataDir = mkdtempSync(join(tmpdir(), 'bp-launcher-'));
let launcher: ChildProcess | undefined;

afterAll(async () => {
  if (launcher && launcher.exitCode === null) launcher.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/** The environment a newcomer has: no DATABASE_URL, no TEMPORAL_ADDRESS. */
function env(ports: { api: number; temporal: number; ui: number }): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, TEMPORAL_ADDRESS: _t, TEST_DATABASE_URL: _x, ...rest } = process.env;
  return { ...rest, DATA_DIR: dataDir, PORT: String(ports.api), TEMPORAL_PORT: String(ports.temporal), TEMPORAL_UI_PORT: String(ports.ui), LOG_LEVEL: 'warn', MEMORY_RELEASE_IDLE_MS: '1000' };
}

async function start(ports: { api: number; temporal: number; ui: number }): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [join(root, 'bin/start.ts')], { env: env(ports), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('Business Platform is running.')) { clearInterval(timer); resolve(); }
      if (child.exitCode !== null) { clearInterval(timer); reject(new Error(`launcher exited early:\n${out}`)); }
    }, 100);
  });
  return { child, output: () => out };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGINT');
  return exited;
}

describe('npm start on embedded defaults', () => {
  it('starts everything, serves a first call, stops cleanly on Ctrl-C and keeps its data', async () => {
    const ports = { api: await freePort(), temporal: await freePort(), ui: await freePort() };
    const first = await start(ports);
    launcher = first.child;
    const banner = first.output();
    expect(banner).toContain(`http://localhost:${ports.api}/v3`);
    expect(banner).toContain(`http://localhost:${ports.api}/docs`);
    expect(banner).toContain(`${ports.ui}`);
    expect(banner).toContain('npm run --silent cli -- keys create');

    const http = client(`http://127.0.0.1:${ports.api}`);
    let ready = await http('/readyz');
    for (let i = 0; i < 40 && ready.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 250));
      ready = await http('/readyz');
    }
    expect(ready.body.checks).toEqual({ postgres: true, temporal: true, worker_polling: true });

    // The CLI finds the database `npm start` is running.
    const { stdout, stderr } = await exec(process.execPath, [join(root, 'bin/cli.ts'), 'keys', 'create', '--name', 'first', '--type', 'test', '--json'], { env: env(ports) });
    expect(stderr).toMatch(/database: postgres(ql)?:\/\/.*\/business_platform \(embedded \(running\)\)/);
    const key = JSON.parse(stdout).key as string;
    const created = await http('/v3/customers', { key, body: { email: 'newcomer@example.com', name: 'New Comer' } });
    expect(created.status).toBe(201);

    const ui = await fetch(`http://127.0.0.1:${ports.ui}/`);
    expect(ui.status).toBe(200);

    // Quiet for a second, the process hands back what starting up left (platform/memory-release.ts).
    const releases = async () => Number(/^bp_memory_releases_total (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${ports.api}/metrics`)).text())?.[1]);
    let released = await releases();
    for (let i = 0; i < 60 && !(released > 0); i++) {
      await new Promise((r) => setTimeout(r, 500));
      released = await releases();
    }
    expect(released).toBeGreaterThanOrEqual(1);

    const pgPid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(await stop(first.child)).toBe(0);
    expect(await portOpen(ports.api)).toBe(false);
    expect(await portOpen(ports.temporal)).toBe(false);
    expect(await portOpen(ports.ui)).toBe(false);
    expect(() => process.kill(pgPid, 0)).toThrow();

    // Second run: same data directory, the customer (PostgreSQL) and the schedule (Temporal) are still there.
    const second = await start(ports);
    launcher = second.child;
    const again = await http(`/v3/customers/${created.body.id}`, { key });
    expect(again.status).toBe(200);
    expect(again.body.email).toBe('newcomer@example.com');
    const { stdout: schedules } = await exec(process.execPath, ['--input-type=module', '-e', `
      const { Client, Connection } = await import('@temporalio/client');
      const connection = await Connection.connect({ address: '127.0.0.1:${ports.temporal}' });
      const ids = []; for await (const s of new Client({ connection }).schedule.list()) ids.push(s.scheduleId);
      console.log(JSON.stringify(ids)); await connection.close();`], { cwd: root });
    expect(JSON.parse(schedules)).toContain('platform-housekeeping');
    expect(await stop(second.child)).toBe(0);
  }, 300_000);
});
