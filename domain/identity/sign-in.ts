import type { Pool } from 'pg';
import { ApiError } from '../../platform/errors.ts';
import { verifyPassword } from './passwords.ts';
import type { LoginThrottle } from './throttle.ts';
import { findCredentials, type Credentials } from './users.ts';

/**
 * Checks an email and password against the user store, under the throttle. One answer for every
 * failure (unknown email, wrong password, no membership in the named account), and the same work
 * for each: an unknown email still costs one Argon2 verification.
 */
export async function checkSignIn(
  pool: Pool, throttle: LoginThrottle, input: { email: string; password: string; accountId?: string; ip: string },
): Promise<Credentials> {
  const attempt = { email: input.email, accountId: input.accountId, ip: input.ip };
  // Counted before the password is checked (a failure unless it succeeds), so parallel guesses cannot all pass.
  const blocked = await throttle.admit(attempt);
  if (blocked > 0) throw signInThrottled(blocked);
  let credentials: Credentials | null;
  let ok: boolean;
  try {
    credentials = await findCredentials(pool, input.email, input.accountId);
    ok = await verifyPassword(credentials?.passwordHash ?? null, input.password);
  } catch (err) {
    // Not checked (the database is down): not a failure of the person signing in.
    await throttle.release(attempt).catch(() => undefined);
    throw err;
  }
  if (!ok || !credentials) throw signInFailed();
  await throttle.recordSuccess(attempt);
  return credentials;
}

export const signInFailed = () => new ApiError({
  status: 401, code: 'sign_in_failed', title: 'Unauthorized',
  detail: 'The email or password is wrong, or the user is no member of that account.',
  suggestion: 'Check the email and password; an account owner can add you as a member, or create users with `npm run cli -- users create`.',
});

export const signInThrottled = (blockedMs: number) => {
  const seconds = Math.max(1, Math.ceil(blockedMs / 1000));
  return new ApiError({
    status: 429, code: 'sign_in_throttled', title: 'Too Many Requests',
    detail: 'Too many failed sign-ins for this email or from this address.',
    suggestion: `Wait ${seconds} seconds before trying again.`,
    headers: { 'Retry-After': String(seconds) },
  });
};
