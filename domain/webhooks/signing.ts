import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64
 * of the key bytes; each delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, several signatures
 * separated by spaces (during a secret rotation, one per secret).
 */
export const SECRET_PREFIX = 'whsec_';
export const SECRET_MIN_BYTES = 24;
export const SECRET_MAX_BYTES = 64;
const GENERATED_SECRET_BYTES = 32;

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(GENERATED_SECRET_BYTES).toString('base64');
}

/** Why `secret` is not a valid signing secret, or null when it is. */
export function secretProblem(secret: string): string | null {
  if (!secret.startsWith(SECRET_PREFIX)) return `a secret starts with ${SECRET_PREFIX} followed by base64`;
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return `the part after ${SECRET_PREFIX} must be standard base64 (A–Z, a–z, 0–9, +, /, = padding)`;
  const bytes = Buffer.from(b64, 'base64').length;
  if (bytes < SECRET_MIN_BYTES || bytes > SECRET_MAX_BYTES) {
    return `the secret must encode ${SECRET_MIN_BYTES}–${SECRET_MAX_BYTES} random bytes (this one encodes ${bytes})`;
  }
  return null;
}

function keyBytes(secret: string): Buffer {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export function sign(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', keyBytes(secret)).update(`${msgId}.${timestampSeconds}.${body}`).digest('base64');
}

/** The three Standard Webhooks headers for one attempt, signed with every given secret. */
export function signatureHeaders(secrets: string[], msgId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => `v1,${sign(s, msgId, timestampSeconds, body)}`).join(' '),
  };
}
