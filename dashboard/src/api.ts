import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import type { inferRouterOutputs } from '@trpc/server';
import type { DashboardRouter } from '../../domain/dashboard/router.ts';

export type Outputs = inferRouterOutputs<DashboardRouter>;
export type Me = Outputs['me'];
export type Key = Outputs['keys']['list'][number];
export type Mode = 'test' | 'live';

/** The session's CSRF token: sent with every call (the server checks it on changes). */
let csrfToken = '';

export const trpc = createTRPCClient<DashboardRouter>({
  links: [httpBatchLink({ url: '/dashboard/trpc', headers: () => (csrfToken ? { 'X-CSRF-Token': csrfToken } : {}) })],
});

interface SessionAnswer {
  user: { id: string; email: string; account_id: string; role: string };
  csrf_token: string;
}

async function sessionCall(method: 'GET' | 'POST' | 'DELETE', body?: unknown): Promise<Response> {
  return fetch('/dashboard/session', {
    method,
    credentials: 'same-origin',
    headers: {
      Accept: 'application/json',
      ...(body ? { 'Content-Type': 'application/json' } : {}),
      ...(csrfToken ? { 'X-CSRF-Token': csrfToken } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

/** The current session, if the cookie still holds one. */
export async function resumeSession(): Promise<boolean> {
  const res = await sessionCall('GET');
  if (!res.ok) return false;
  const answer = (await res.json()) as Partial<SessionAnswer>;
  if (answer.csrf_token) csrfToken = answer.csrf_token;
  return Boolean(answer.user);
}

/** Signs in; the error message is the server's (a problem document's detail and suggestion). */
export async function signIn(email: string, password: string): Promise<void> {
  const res = await sessionCall('POST', { email, password });
  if (!res.ok) {
    const problem = (await res.json().catch(() => ({}))) as { detail?: string; suggestion?: string };
    throw new Error([problem.detail ?? `Sign-in failed (HTTP ${res.status}).`, problem.suggestion].filter(Boolean).join(' '));
  }
  csrfToken = ((await res.json()) as SessionAnswer).csrf_token;
}

export async function signOut(): Promise<void> {
  await sessionCall('DELETE');
  csrfToken = '';
}

/** A readable message for anything a call threw. */
export function errorMessage(err: unknown): string {
  if (err instanceof TRPCClientError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

export function isSignedOut(err: unknown): boolean {
  return err instanceof TRPCClientError && (err.data as { code?: string } | undefined)?.code === 'UNAUTHORIZED';
}
