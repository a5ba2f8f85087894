import { createUser } from '../../domain/identity/public.ts';
import type { TestPlatform } from '../support/platform.ts';

/** A dashboard user's credentials, for the sign-in form or `POST /dashboard/session`. */
export interface TestUser {
  email: string;
  password: string;
}

let n = 0;

export async function newUser(platform: TestPlatform, role: 'owner' | 'admin' | 'developer' | 'viewer', accountId = platform.accountId): Promise<TestUser> {
  const user = { email: `${role}-${++n}-${Date.now()}@example.com`, password: `correct horse battery ${role} ${n}` };
  await createUser(platform.orm, { ...user, accountId, role });
  return user;
}

/** A signed-in HTTP client of the dashboard: the session cookie and its CSRF token. */
export interface DashboardClient {
  cookie: string;
  csrf: string;
  /** Calls a tRPC procedure: a query with GET, a mutation with POST (with the CSRF token unless `csrf: null`). */
  call(kind: 'query' | 'mutation', path: string, input?: unknown, opts?: { csrf?: string | null; cookie?: string | null }): Promise<{ status: number; body: any }>;
}

export async function signIn(platform: TestPlatform, user: TestUser): Promise<DashboardClient> {
  const res = await fetch(`${platform.url}/dashboard/session`, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(user),
  });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('bp_session='))!;
  const { csrf_token: csrf } = (await res.json()) as { csrf_token: string };
  return {
    cookie, csrf,
    async call(kind, path, input, opts = {}) {
      const headers: Record<string, string> = { accept: 'application/json' };
      const sendCookie = opts.cookie === undefined ? cookie : opts.cookie;
      if (sendCookie) headers.cookie = sendCookie;
      const token = opts.csrf === undefined ? csrf : opts.csrf;
      if (token) headers['x-csrf-token'] = token;
      const url = `${platform.url}/dashboard/trpc/${path}`;
      const r = kind === 'query'
        ? await fetch(input === undefined ? url : `${url}?input=${encodeURIComponent(JSON.stringify(input))}`, { headers })
        : await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(input ?? null) });
      return { status: r.status, body: await r.json() };
    },
  };
}
