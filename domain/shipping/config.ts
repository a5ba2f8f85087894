import { z } from 'zod';

/**
 * The shipping area's settings, read from the environment once per process (validated; a bad value
 * stops the process with its name, like the platform's own settings). Documented in README.md.
 */
const positiveInt = z.coerce.number().int().positive();
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' }).transform((v) => v === 'true' || v === '1' || v === 'yes');

const schema = z.object({
  /** Sandbox journeys without a test clock run in compressed real time: label to delivered in this long. */
  SHIPPING_SANDBOX_JOURNEY_MS: positiveInt.min(500).max(86_400_000).default(60_000),
  /** How often a real carrier is polled for tracking (push is the main channel). */
  SHIPPING_POLL_INTERVAL_MS: positiveInt.min(1000).default(1_800_000),
  /** Sandbox carriers that answer every call with 503, comma-separated (e.g. `cargoline`). */
  SHIPPING_SANDBOX_DOWN: z.string().default(''),
  /** Overrides the sandbox carriers' simulated latency (ms). */
  SHIPPING_SANDBOX_LATENCY_MS: z.coerce.number().int().min(0).max(60_000).optional(),
  /** How long POST /v3/shipping/rates/compare waits for each carrier. */
  SHIPPING_COMPARE_TIMEOUT_MS: positiveInt.max(30_000).default(2000),
  /** Development only: let live-mode shipments use the sandbox carriers. */
  SHIPPING_LIVE_SANDBOX: bool.default(false),
  EASYPOST_API_KEY: z.string().min(8).optional(),
  /** Another EasyPost API base, e.g. a local server (tests). */
  EASYPOST_API_BASE: z.url().optional(),
  EASYPOST_WEBHOOK_SECRET: z.string().min(8).optional(),
});

export type ShippingConfig = z.output<typeof schema>;

export function loadShippingConfig(env: Record<string, string | undefined> = process.env): ShippingConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => (k.startsWith('SHIPPING_') || k.startsWith('EASYPOST_')) && v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  throw new Error(`Invalid shipping configuration:\n${parsed.error.issues.map((i) => `  - ${String(i.path[0])}: ${i.message}`).join('\n')}`);
}
