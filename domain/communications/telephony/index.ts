import type { Pool } from 'pg';
import { z } from 'zod';
import { SandboxTelephony } from './sandbox.ts';
import type { TelephonyAdapter } from './types.ts';

export type { TelephonyAdapter } from './types.ts';

/**
 * The area's own settings, read from the environment once per process (listed in README.md):
 * - COMMUNICATIONS_SANDBOX_SECOND_MS: real milliseconds per second of sandbox call time (default
 *   100: a 30-second sandbox call takes 3 s; tests use less);
 * - COMMUNICATIONS_LIVE_SANDBOX: let live mode use the sandbox carrier (development only).
 */
const settingsSchema = z.object({
  COMMUNICATIONS_SANDBOX_SECOND_MS: z.coerce.number().int().min(1).max(1000).default(100),
  COMMUNICATIONS_LIVE_SANDBOX: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
});

export interface Telephony {
  /** The carrier of a mode, or null when live mode has none configured. */
  carrier(livemode: boolean): TelephonyAdapter | null;
}

export function telephonySettings(env: NodeJS.ProcessEnv = process.env) {
  const parsed = settingsSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`communications settings: ${parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** Test mode always uses the sandbox; live mode only when a real carrier (none yet) or the dev flag allows. */
export function createTelephony(pool: () => Promise<Pool>, env: NodeJS.ProcessEnv = process.env, sandbox?: TelephonyAdapter): Telephony {
  const settings = telephonySettings(env);
  const adapter = sandbox ?? new SandboxTelephony(pool, { secondMs: settings.COMMUNICATIONS_SANDBOX_SECOND_MS });
  return { carrier: (livemode) => (!livemode || settings.COMMUNICATIONS_LIVE_SANDBOX ? adapter : null) };
}
