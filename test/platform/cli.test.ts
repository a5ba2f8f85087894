import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';

const exec = promisify(execFile);
let platform: TestPlatform;

beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.close());

/** Runs the CLI exactly as scripts do: `npm run --silent cli -- …`, against the test database. */
async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await exec('npm', ['run', '--silent', 'cli', '--', ...args], {
      env: { ...process.env, DATABASE_URL: platform.dbUrl, npm_config_loglevel: 'silent' },
    });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

describe('key management CLI', () => {
  it('creates an account and keys, prints one JSON object each, and the keys work', async () => {
    const account = await cli('accounts', 'create', '--name', 'Acme Corp', '--tier', 'premium', '--json');
    expect(account.code).toBe(0);
    const acct = JSON.parse(account.stdout);
    expect(acct).toMatchObject({ id: expect.stringMatching(/^acct_/), name: 'Acme Corp', tier: 'premium' });

    const created = await cli('keys', 'create', '--name', 'CI key', '--type', 'restricted', '--mode', 'live',
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
