import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';
import { maskDatabaseUrl, resolveDatabase } from '../../platform/local-database.ts';

const exec = promisify(execFile);
let platform: TestPlatform;

usePlatform({}, (t) => ({ platform } = t));

/** Runs the CLI exactly as scripts do: `npm run --silent cli -- …`, against the test database. */
async function npmCli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return run('npm', ['run', '--silent', 'cli', '--', ...args], { DATABASE_URL: platform.dbUrl });
}

/** The same program without npm in front (what `npm run cli` runs), for the other calls: npm adds a second to each. */
async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return cliWith({ DATABASE_URL: platform.dbUrl }, ...args);
}

async function cliWith(env: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return run(process.execPath, ['bin/cli.ts', ...args], env);
}

async function run(command: string, args: string[], env: Record<string, string>): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await exec(command, args, { env: { ...process.env, ...env, npm_config_loglevel: 'silent' } });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

describe('key management CLI', () => {
  it('creates an account and keys (the key as scripts do, through npm), prints one JSON object each, and the keys work', async () => {
    const account = await cli('accounts', 'create', '--name', 'Acme Corp', '--tier', 'premium', '--json');
    expect(account.code).toBe(0);
    const acct = JSON.parse(account.stdout);
    expect(acct).toMatchObject({ id: expect.stringMatching(/^acct_/), name: 'Acme Corp', tier: 'premium' });

    const created = await npmCli('keys', 'create', '--name', 'CI key', '--type', 'restricted', '--mode', 'live',
      '--permissions', 'crm:read,billing:write', '--expires', '2099-12-31', '--account', acct.id, '--json');
    expect(created.code).toBe(0);
    expect(created.stdout.trim().split('\n')).toHaveLength(1);
    const key = JSON.parse(created.stdout);
    expect(key).toMatchObject({ id: expect.stringMatching(/^key_/), type: 'restricted', mode: 'live', account_id: acct.id, permissions: ['crm:read', 'billing:write'], expires_at: '2099-12-31T00:00:00.000Z' });
    expect(key.key).toMatch(/^bp_rk_live_/);

    const res = await client(platform.url)('/v3/customers', { key: key.key });
    expect(res.status).toBe(200);
    expect(res.body.livemode).toBeUndefined();
    expect(res.headers.get('x-ratelimit-limit')).toBe('5000');

    const listed = JSON.parse((await cli('keys', 'list', '--account', acct.id, '--json')).stdout);
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({ id: key.id, key: `bp_rk_live_…${key.key.slice(-4)}`, status: 'active' });
    expect(listed.data[0].last_used).not.toBe('Never');

    const revoked = await cli('keys', 'revoke', key.id, '--json');
    expect(JSON.parse(revoked.stdout).status).toBe('revoked');
    expect((await client(platform.url)('/v3/customers', { key: key.key })).body.code).toBe('api_key_revoked');
  });

  it('uses a default account, created on first use, when --account is not given', async () => {
    const first = JSON.parse((await cli('keys', 'create', '--name', 'one', '--type', 'test', '--json')).stdout);
    const second = JSON.parse((await cli('keys', 'create', '--name', 'two', '--type', 'live', '--json')).stdout);
    expect(first.account_id).toBe(second.account_id);
    expect(second.key).toMatch(/^bp_live_/);
    const human = await cli('keys', 'list');
    expect(human.stdout).toContain('one');
    expect(human.stdout).toContain('Never');
    expect(human.stdout).not.toContain(first.key);
  });

  it('explains bad input and exits non-zero', async () => {
    const bad = await cli('keys', 'create', '--name', 'x', '--type', 'restricted', '--permissions', 'crm:delete');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--permissions');
    expect(bad.stderr).toContain('crm:delete');
    const usage = await cli('keys', 'create', '--name', 'x', '--type', 'master');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--type must be one of: live, test, restricted');
    const unknown = await cli('keys', 'rotate');
    expect(unknown.code).toBe(2);
  });
});

describe('the database the CLI uses', () => {
  it('is resolved like `npm start`: an empty DATABASE_URL means the embedded server `npm start` runs under DATA_DIR', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bp-cli-'));
    try {
      // What `npm start` records while its embedded server runs (here: pointing at this file's database).
      writeFileSync(join(dataDir, 'postgres.json'), JSON.stringify({ url: platform.dbUrl, pid: process.pid }));
      const created = await cliWith({ DATABASE_URL: '', DATA_DIR: dataDir }, 'accounts', 'create', '--name', 'Via start', '--json');
      expect(created.code).toBe(0);
      const account = JSON.parse(created.stdout);
      expect(await platform.sql('select id from accounts where id = $1', [account.id])).toHaveLength(1);
      expect(created.stderr).toContain(`database: ${maskDatabaseUrl(platform.dbUrl)} (embedded (running))`);

      const resolved = await resolveDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir }, { advertise: false });
      expect(resolved).toMatchObject({ url: platform.dbUrl, source: 'embedded (running)' });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('names the database on stderr with the password masked, keeping --json stdout one JSON object', async () => {
    const res = await cli('keys', 'list', '--json');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout).object).toBe('list');
    expect(res.stderr).toContain(`database: ${maskDatabaseUrl(platform.dbUrl)} (DATABASE_URL)`);
    const password = new URL(platform.dbUrl).password;
    if (password) expect(res.stderr).not.toContain(password);
    expect(maskDatabaseUrl('postgres://bp:s3cret@db.example:5432/bp')).toBe('postgres://bp:****@db.example:5432/bp');
  });

  it('refuses a malformed DATABASE_URL, as `npm start` does, instead of using another database', async () => {
    const res = await cliWith({ DATABASE_URL: 'mysql://nope' }, 'keys', 'list', '--json');
    expect(res.code).toBe(78);
    expect(res.stderr).toContain('DATABASE_URL');
    expect(res.stdout).toBe('');
  });
});
