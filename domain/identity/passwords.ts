import { hash, verify } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';

/**
 * Password hashing with Argon2id (the library's defaults: 19 MiB memory, 2 passes, 1 lane, which is
 * OWASP's recommended minimum). The hash string carries its own parameters, so raising them later
 * still verifies the old hashes.
 */
export const PASSWORD_MIN_LENGTH = 12;
/** Argon2 takes any length, but a megabyte password is only a way to burn CPU. */
export const PASSWORD_MAX_LENGTH = 256;

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/** A hash of a password nobody knows: verified against when the email is unknown, so both cost the same. */
let decoy: Promise<string> | undefined;

/**
 * True when `password` matches `stored`. With no stored hash (unknown email) it verifies against a
 * decoy and answers false, so the answer takes the same time whether the email exists or not.
 */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    decoy ??= hash(randomBytes(32).toString('base64url'));
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}

/** A password for a user created without one (shown once): 24 characters, about 143 bits. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}

export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return null;
}
