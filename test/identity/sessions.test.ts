import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  addMember, changeMemberRole, checkCsrf, createUser, listMembers, removeMember, sessionFromRequest,
} from '../../domain/identity/public.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform } from '../support/use-platform.ts';

const exec = promisify(execFile);
let platform: TestPlatform;
let accountId: string;
usePlatform({}, (t) => ({ platform, accountId } = t));

const PASSWORD = 'correct horse battery staple';
let ipCounter = 0;
/** Each test signs in from its own address (the API trusts X-Forwarded-For from loopback), so the address throttle stays its own. */
const newIp = () => `203.0.113.${++ipCounter}`;

async function signIn(body: unknown, opts: { ip?: string; headers?: Record<string, string>; raw?: string } = {}) {
  const res = await fetch(`${platform.url}/dashboard/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': opts.ip ?? newIp(), ...opts.headers },
    body: opts.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null, cookie: res.headers.get('set-cookie') };
}

async function session(method: string, cookie: string | null, headers: Record<string, string> = {}) {
  const res = await fetch(`${platform.url}/dashboard/session`, { method, headers: { ...(cookie ? { cookie } : {}), ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

const cookieOf = (setCookie: string | null) => setCookie!.split(';')[0]!;
let userCounter = 0;
const newEmail = () => `user${++userCounter}-${Date.now()}@example.com`;

async function newOwner(account = accountId) {
  const email = newEmail();
  const member = await createUser(platform.orm, { email, password: PASSWORD, accountId: account, role: 'owner' });
  return { email, member };
}

describe('dashboard sign-in', () => {
  it('signs in, sets a secure session cookie, answers who is signed in, stores only the token\'s hash', async () => {
    const { email, member } = await newOwner();
    const res = await signIn({ email: email.toUpperCase(), password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user: { id: member.id, email, account_id: accountId, role: 'owner' }, csrf_token: expect.stringMatching(/^[\w-]{43}$/) });
    expect(res.cookie).toMatch(/^bp_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Expires=/);
    expect(res.cookie).not.toContain('Secure');
    expect(res.headers.get('cache-control')).toBe('no-store');

    const me = await session('GET', cookieOf(res.cookie));
    expect(me.status).toBe(200);
    expect(me.body).toEqual(res.body);

    const token = cookieOf(res.cookie).split('=')[1]!;
    const rows = await platform.sql<{ token_hash: Buffer }>('select token_hash from dashboard_sessions where user_id = $1', [member.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash.equals(createHash('sha256').update(token).digest())).toBe(true);
    expect(JSON.stringify(await platform.sql('select * from dashboard_sessions'))).not.toContain(token);
  });

  it('marks the cookie Secure when the request came over HTTPS (through a trusted proxy)', async () => {
    const { email } = await newOwner();
    const res = await signIn({ email, password: PASSWORD }, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.status).toBe(200);
    expect(res.cookie).toMatch(/; Secure$/);
  });

  it('answers a wrong password and an unknown email the same way', async () => {
    const { email } = await newOwner();
    const wrong = await signIn({ email, password: 'not the password at all' });
    const unknown = await signIn({ email: 'nobody-here@example.com', password: PASSWORD });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const strip = (b: any) => ({ ...b, request_id: undefined });
    expect(strip(wrong.body)).toEqual(strip(unknown.body));
    expect(wrong.body.code).toBe('sign_in_failed');
    expect(wrong.cookie).toBeNull();
  });

  it('signs in to the account named, and refuses an account the user is no member of like a wrong password', async () => {
    const { email, member } = await newOwner();
    const second = await platform.newAccount();
    await addMember(platform.orm, { accountId: second, email, role: 'viewer' });
    const there = await signIn({ email, password: PASSWORD, account_id: second });
    expect(there.body.user).toEqual({ id: member.id, email, account_id: second, role: 'viewer' });
    const first = await signIn({ email, password: PASSWORD });
    expect(first.body.user.account_id).toBe(accountId);
    const elsewhere = await signIn({ email, password: PASSWORD, account_id: await platform.newAccount() });
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.code).toBe('sign_in_failed');
  });

  it('throttles failed sign-ins per email: after 5 failures even the right password gets 429 with Retry-After', async () => {
    const { email } = await newOwner();
    for (let i = 0; i < 5; i++) {
      expect((await signIn({ email, password: `wrong password ${i}` })).status).toBe(401);
    }
    const blocked = await signIn({ email, password: PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe('sign_in_throttled');
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // Another user from the same addresses is not held back.
    const other = await newOwner();
    expect((await signIn({ email: other.email, password: PASSWORD })).status).toBe(200);
  });

  it('throttles failed sign-ins per address, whatever emails it tries', async () => {
    const ip = newIp();
    const { email } = await newOwner();
    for (let i = 0; i < 50; i++) {
      expect((await signIn({ email: `guess${i}@example.com`, password: 'guessing-password' }, { ip })).status).toBe(401);
    }
    const blocked = await signIn({ email, password: PASSWORD }, { ip });
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await signIn({ email, password: PASSWORD }, { ip: newIp() })).status).toBe(200);
  });

  it('signs out only with the session\'s CSRF token; the cookie no longer opens a session after', async () => {
    const { email } = await newOwner();
    const res = await signIn({ email, password: PASSWORD });
    const cookie = cookieOf(res.cookie);
    const missing = await session('DELETE', cookie);
    expect(missing.status).toBe(403);
    expect(missing.body.code).toBe('csrf_token_invalid');
    const other = await signIn({ email, password: PASSWORD });
    const wrong = await session('DELETE', cookie, { 'x-csrf-token': other.body.csrf_token });
    expect(wrong.status).toBe(403);
    expect((await session('GET', cookie)).status).toBe(200);

    const out = await session('DELETE', cookie, { 'x-csrf-token': res.body.csrf_token });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^bp_session=; .*Max-Age=0/);
    const after = await session('GET', cookie);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('session_required');
    expect((await session('DELETE', cookie, { 'x-csrf-token': res.body.csrf_token })).status).toBe(401);
    // The other session is untouched.
    expect((await session('GET', cookieOf(other.cookie))).status).toBe(200);
  });

  it('checkCsrf and sessionFromRequest, for the dashboard\'s own routes', async () => {
    const { email, member } = await newOwner();
    const res = await signIn({ email, password: PASSWORD });
    const s = await sessionFromRequest(platform.orm, { headers: { cookie: `theme=dark; ${cookieOf(res.cookie)}` } });
    expect(s).toMatchObject({ userId: member.id, email, accountId, role: 'owner', csrfToken: res.body.csrf_token, sessionId: expect.stringMatching(/^dses_/) });
    expect(checkCsrf(s!, { headers: { 'x-csrf-token': res.body.csrf_token } })).toBe(true);
    expect(checkCsrf(s!, { headers: { 'x-csrf-token': `${res.body.csrf_token}x` } })).toBe(false);
    expect(checkCsrf(s!, { headers: {} })).toBe(false);
    expect(await sessionFromRequest(platform.orm, { headers: { cookie: 'bp_session=not-a-token' } })).toBeNull();
    expect(await sessionFromRequest(platform.orm, { headers: {} })).toBeNull();
  });

  it('refuses an expired session and an idle one', async () => {
    const { email, member } = await newOwner();
    const a = cookieOf((await signIn({ email, password: PASSWORD })).cookie);
    const b = cookieOf((await signIn({ email, password: PASSWORD })).cookie);
    const ids = (await platform.sql<{ id: string }>('select id from dashboard_sessions where user_id = $1 order by created_at, id', [member.id])).map((r) => r.id);
    await platform.sql(`update dashboard_sessions set expires_at = now() - interval '1 second' where id = $1`, [ids[0]]);
    await platform.sql(`update dashboard_sessions set last_seen_at = now() - interval '31 minutes' where id = $1`, [ids[1]]);
    const responses = [await session('GET', a), await session('GET', b)];
    expect(responses.map((r) => r.status)).toEqual([401, 401]);
    expect(responses.map((r) => r.body.code)).toEqual(['session_required', 'session_required']);
  });

  it('refuses bad input with a 4xx naming the field, never a 500', async () => {
    const cases: [unknown, number, string?][] = [
      [{ email: 'a\u0000b@example.com', password: PASSWORD }, 422, 'email'],
      [{ email: 'x'.repeat(10_000), password: PASSWORD }, 422, 'email'],
      [{ email: 'a@example.com', password: 'p'.repeat(5000) }, 422, 'password'],
      [{ email: 'a@example.com' }, 422, 'password'],
      [{ email: 12, password: PASSWORD }, 422, 'email'],
      [{ email: 'a@example.com', password: PASSWORD, account_id: 'acct_\u0000' }, 422, 'account_id'],
      [[1, 2], 422],
    ];
    for (const [body, status, path] of cases) {
      const res = await signIn(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      if (path) expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
    expect((await signIn(null, { raw: '['.repeat(100) + ']'.repeat(100) })).body.code).toBe('json_too_deep');
    expect((await signIn(null, { raw: '{"email": ' })).body.code).toBe('invalid_json');
    expect((await signIn(null, { raw: JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(20_000) }) })).status).toBe(413);
    const form = await signIn(null, { raw: 'email=a&password=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    const put = await session('PUT', null);
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
  });
});

describe('account members', () => {
  it('adds, lists, changes and removes members; the last owner stays', async () => {
    const account = await platform.newAccount();
    const { member: owner } = await newOwner(account);
    const added = await addMember(platform.orm, { accountId: account, email: newEmail(), role: 'developer' });
    expect(added.temporary_password).toMatch(/^[\w-]{24}$/);
    expect(added.member).toMatchObject({ object: 'account_member', account_id: account, role: 'developer' });
    const members = await listMembers(platform.orm, account);
    expect(members.map((m) => [m.id, m.role])).toEqual([[owner.id, 'owner'], [added.member.id, 'developer']]);

    // The generated password signs in; a second add is a conflict.
    expect((await signIn({ email: added.member.email, password: added.temporary_password!, account_id: account })).status).toBe(200);
    await expect(addMember(platform.orm, { accountId: account, email: added.member.email, role: 'viewer' })).rejects.toMatchObject({ code: 'member_exists' });

    await expect(changeMemberRole(platform.orm, { accountId: account, userId: owner.id, role: 'admin' })).rejects.toMatchObject({ code: 'last_owner', status: 409 });
    await expect(removeMember(platform.orm, { accountId: account, userId: owner.id })).rejects.toMatchObject({ code: 'last_owner' });
    expect((await changeMemberRole(platform.orm, { accountId: account, userId: added.member.id, role: 'owner' })).role).toBe('owner');
    expect((await changeMemberRole(platform.orm, { accountId: account, userId: owner.id, role: 'viewer' })).role).toBe('viewer');
    await expect(changeMemberRole(platform.orm, { accountId: account, userId: owner.id, role: 'root' as never })).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('a role change shows at the next request; a removed member\'s session ends', async () => {
    const account = await platform.newAccount();
    await newOwner(account);
    const { member, temporary_password } = await addMember(platform.orm, { accountId: account, email: newEmail(), role: 'admin' });
    const cookie = cookieOf((await signIn({ email: member.email, password: temporary_password, account_id: account })).cookie);
    await changeMemberRole(platform.orm, { accountId: account, userId: member.id, role: 'viewer' });
    expect((await session('GET', cookie)).body.user.role).toBe('viewer');
    await removeMember(platform.orm, { accountId: account, userId: member.id });
    expect((await session('GET', cookie)).status).toBe(401);
    expect((await listMembers(platform.orm, account)).map((m) => m.id)).not.toContain(member.id);
  });

  it('another account\'s member ids answer 404, like unknown ones', async () => {
    const mine = await platform.newAccount();
    const theirs = await platform.newAccount();
    await newOwner(mine);
    const { member: stranger } = await newOwner(theirs);
    for (const userId of [stranger.id, 'usr_unknown', 'x'.repeat(10_000)]) {
      await expect(changeMemberRole(platform.orm, { accountId: mine, userId, role: 'viewer' })).rejects.toMatchObject({ status: 404, code: 'not_found' });
      await expect(removeMember(platform.orm, { accountId: mine, userId })).rejects.toMatchObject({ status: 404 });
    }
    expect((await listMembers(platform.orm, theirs))[0]!.role).toBe('owner');
  });

  it('validates createUser and addMember input', async () => {
    await expect(createUser(platform.orm, { email: 'not-an-email', password: 'short', accountId, role: 'owner' }))
      .rejects.toMatchObject({ code: 'validation_failed', errors: [{ path: 'email' }, { path: 'password' }] });
    await expect(createUser(platform.orm, { email: 'x@example.com', password: PASSWORD, accountId: 'acct_nope', role: 'owner' }))
      .rejects.toMatchObject({ status: 404 });
    const { email } = await newOwner();
    await expect(createUser(platform.orm, { email, password: PASSWORD, accountId, role: 'owner' })).rejects.toMatchObject({ code: 'user_exists' });
    await expect(addMember(platform.orm, { accountId, email: 'nul\u0000@example.com', role: 'viewer' })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('users CLI', () => {
  it('creates the first owner with the password from BP_USER_PASSWORD, or a generated one shown once; lists users', async () => {
    const env = { ...process.env, DATABASE_URL: platform.dbUrl, LOG_LEVEL: 'warn' };
    const account = await platform.newAccount();
    const email = newEmail();
    const created = await exec(process.execPath, ['bin/cli.ts', 'users', 'create', '--email', email, '--role', 'owner', '--account', account, '--json'],
      { env: { ...env, BP_USER_PASSWORD: PASSWORD } });
    expect(JSON.parse(created.stdout)).toMatchObject({ email, role: 'owner', account_id: account });
    expect(created.stdout).not.toContain(PASSWORD);
    expect((await signIn({ email, password: PASSWORD })).status).toBe(200);

    const second = newEmail();
    const generated = await exec(process.execPath, ['bin/cli.ts', 'users', 'create', '--email', second, '--role', 'viewer', '--account', account], { env });
    const password = /password: (\S+)/.exec(generated.stdout)![1]!;
    expect((await signIn({ email: second, password })).body.user).toMatchObject({ email: second, role: 'viewer', account_id: account });

    const listed = JSON.parse((await exec(process.execPath, ['bin/cli.ts', 'users', 'list', '--account', account, '--json'], { env })).stdout);
    expect(listed.data.map((u: any) => u.email).sort()).toEqual([email, second].sort());
    expect(JSON.stringify(listed)).not.toMatch(/argon2|password/);

    const bad = await exec(process.execPath, ['bin/cli.ts', 'users', 'create', '--email', newEmail(), '--role', 'root', '--account', account], { env })
      .catch((err: { code: number; stderr: string }) => err);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('--role must be one of') });
  }, 60_000);
});
