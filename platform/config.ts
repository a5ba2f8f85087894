import { setFlagsFromString } from 'node:v8';
import { z } from 'zod';

/**
 * Every setting the platform reads from the environment, validated once at start.
 * A bad value stops the process with one line per bad variable (see `loadConfig`).
 */
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const schema = z.object({
  PORT: port.default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// connection URL')
    .optional(),
  DATABASE_POOL_MAX: positiveInt.default(20),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port, e.g. 127.0.0.1:7233').optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** Longest an API request waits on Temporal calls (beyond a route's own wait); then it answers 503 (within 5 s in all). */
  TEMPORAL_CALL_TIMEOUT_MS: positiveInt.min(500).default(4000),
  TEMPORAL_UI_PORT: port.default(8233),
  /** gRPC port of the dev server `npm start` runs when TEMPORAL_ADDRESS is unset. */
  TEMPORAL_PORT: port.default(7233),
  /** Where `npm start` keeps the embedded PostgreSQL and the Temporal dev server's SQLite file. */
  DATA_DIR: z.string().min(1).optional(),
  TEMPORAL_UI_URL: z.url().optional(),
  /**
   * The public origin of the API (e.g. https://api.example.com), behind any proxy: the OpenID
   * Provider's issuer is PUBLIC_URL/oauth. Unset (development, tests): taken from each request.
   */
  PUBLIC_URL: z.url().regex(/^https?:\/\/[^/?#]+\/?$/, 'expected an origin such as https://api.example.com').optional(),
  /**
   * Workers: how long a workflow task waits for the worker that has the workflow cached (its sticky
   * queue) before any worker may take it; bounds the pause of those workflows when that worker dies.
   */
  TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: positiveInt.min(500).default(10_000),
  /** Prepended to every task queue name; lets test files and tenants share one Temporal server. */
  TASK_QUEUE_PREFIX: z.string().default(''),
  /**
   * `per-area`: each area's workflows and activities on its own task queue, one worker each (scaled
   * per area). `single`: every area on one queue served by one worker: less start-up time and memory
   * for small installations and the test suite. API and workers must agree.
   */
  TEMPORAL_TASK_QUEUES: z.enum(['per-area', 'single']).default('per-area'),
  /**
   * Workers: the workflow threads of a worker process, shared by its area workers (each area keeps
   * its own task queue, slots and cache; the threads run whichever area's workflow code is due).
   */
  TEMPORAL_WORKFLOW_THREADS: positiveInt.max(16).default(1),
  /**
   * Workers: each workflow thread's V8 young generation, in MB (0: V8's default, which grows with the
   * machine's memory: 192 MB at 24 GB). What a workflow activation allocates dies with it, so a small
   * young generation costs no measurable CPU and keeps ~150 MB of resident memory off the process
   * under load (docs/benchmarks.md, target 5).
   */
  TEMPORAL_WORKFLOW_THREAD_YOUNG_GEN_MB: z.coerce.number().int().min(0).max(1024).default(16),
  /**
   * How far V8 lets each heap of the process (the main thread's and the workflow threads') grow past
   * what the last full collection kept before it collects again, in percent (0: V8's own choice,
   * up to 300 % on a large host, or a `--heap-growing-percent` node flag). Under load the heaps
   * fill with garbage up to that bound, so it sets the resident peak: 50 lowered the commerce
   * benchmark's peak by a third (931 → 595 MB) for about 5 % of its orders per second
   * (docs/benchmarks.md, target 5).
   */
  V8_HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(300).default(50),
  /**
   * After how long a quiet spell (the event loop under 5 % busy) a long-running process runs one
   * memory-reducing collection, handing back to the system the heap pages V8 keeps after a burst:
   * in the first quiet spell after its start, then whenever its resident size grew by 64 MB or more
   * since the last one; 0: never (platform/memory-release.ts).
   */
  MEMORY_RELEASE_IDLE_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
  /**
   * How often a long-running process hands the free pages of glibc's malloc back to the system
   * (`malloc_trim`, on the thread pool, a few ms; also after each memory release); 0: only after a
   * release. Nothing happens without glibc (platform/malloc-trim.ts).
   */
  MALLOC_TRIM_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(5_000),
  /** Workers: workflows each area worker keeps in memory between their tasks (the SDK's default grows with the heap limit: ~2,400 here). */
  TEMPORAL_MAX_CACHED_WORKFLOWS: positiveInt.min(2).default(100),
  /**
   * Workers: how long one request to a workflow thread (an activation, a workflow's creation or
   * disposal) may compute before it is stopped and its workflow task failed as a potential deadlock
   * (the SDK's deadlock detection; 5 s is the SDK's default). Node enforces it with a watchdog thread
   * started and joined per bounded call (nodejs/node#47739): the SDK bounds each of the ~6 calls of
   * an activation alone, worker/workflow-thread.ts bounds each request once. 0 turns it off: a
   * workflow task stuck in a loop then holds its workflow thread until the process restarts,
   * instead of failing its task (docs/benchmarks.md, "Where the CPU goes").
   */
  TEMPORAL_WORKFLOW_DEADLOCK_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(5000),
  /**
   * Workers: whether workflows keep the stack of every promise they create, which is what the
   * Temporal UI's "Stack Trace" tab (the `__stack_trace` query) shows of a workflow's waits. The SDK
   * does it with a V8 promise hook that formats a source-mapped stack trace per promise: 15–20 % of
   * the workflow thread's CPU under load (docs/benchmarks.md, "Where the CPU goes"). `false` saves
   * that; the query then answers that stack traces are not enabled on the worker.
   */
  TEMPORAL_WORKFLOW_STACK_TRACES: bool.default(true),
  /**
   * Workers: how each area worker polls its queues. `autoscaling` (Temporal's recommendation, server
   * 1.28+): the number of open polls follows the load the server reports, so a busy queue gets more
   * and an idle one keeps one; `fixed`: the SDK's 10 workflow-task and 10 activity-task polls each.
   */
  TEMPORAL_POLLERS: z.enum(['autoscaling', 'fixed']).default('autoscaling'),
  /** Workers: a prebuilt workflow bundle to load; default: `workflow-bundle.js` of `npm run build` when there is one, else bundled from source at start. */
  WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'use at least 16 characters').optional(),
  /** Bearer token Prometheus presents on GET /metrics; unset: /metrics answers loopback clients only. */
  METRICS_TOKEN: z.string().min(16, 'use at least 16 characters').optional(),
  /** A worker-only process (`npm run start:worker`) serves GET /metrics on this port; unset: no metrics listener. */
  METRICS_PORT: port.optional(),
  /** The Temporal SDK's own metrics (Core: pollers, slots, latencies) in Prometheus format on this host:port, e.g. 0.0.0.0:9464. */
  TEMPORAL_METRICS_BIND_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port, e.g. 0.0.0.0:9464').optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(100),
  RATE_LIMIT_PER_MINUTE_PREMIUM: positiveInt.default(5000),
  RATE_LIMIT_PER_DAY: positiveInt.default(10_000),
  RATE_LIMIT_CONCURRENCY: positiveInt.default(10),
  REQUEST_LOG_FLUSH_MS: positiveInt.default(1000),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Webhooks: how long one delivery attempt may take (connect, send, answer), in ms. */
  WEBHOOK_TIMEOUT_MS: positiveInt.max(120_000).default(15_000),
  /** Webhooks: the nominal waits before each retry, comma-separated durations (ms, s, m, h); jittered, capped by the window. */
  WEBHOOK_RETRY_SCHEDULE: z.string().regex(/^\s*\d+(ms|s|m|h)\s*(,\s*\d+(ms|s|m|h)\s*)*$/, 'expected durations such as 5s,30s,2m,1h').default('5s,30s,2m,10m,30m,1h,2h,4h,8h,8h'),
  /** Webhooks: no attempt is made later than this after a delivery's first attempt. */
  WEBHOOK_RETRY_WINDOW: z.string().regex(/^\d+(ms|s|m|h)$/, 'expected a duration such as 24h').default('24h'),
  /** Webhooks: each retry wait is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  WEBHOOK_RETRY_JITTER: z.coerce.number().min(0).max(0.5).default(0.2),
  /**
   * Webhooks: the bound on a delivery's first attempt, which the outbox dispatcher makes itself (a
   * slower receiver counts as a timeout and is retried by the delivery workflow with WEBHOOK_TIMEOUT_MS).
   */
  WEBHOOK_FIRST_ATTEMPT_TIMEOUT_MS: positiveInt.max(120_000).default(5000),
  /** Webhooks: a worker that dies mid-attempt is noticed after this long (the attempt then runs again). */
  WEBHOOK_HEARTBEAT_TIMEOUT_MS: positiveInt.min(500).default(10_000),
  /** Outbox: how often the dispatcher sweeps for undispatched events when no write has nudged it. */
  EVENT_DISPATCH_SWEEP_MS: positiveInt.min(100).default(5000),
  /** Outbox: dispatcher passes a worker process runs at once when notified of new events, and events per pass. */
  EVENT_DISPATCH_PASSES: positiveInt.max(64).default(4),
  EVENT_DISPATCH_BATCH: positiveInt.max(1000).default(50),
  /**
   * Outbox: passes of a worker process that have planned and wait for their workflow starts, at
   * most; past it, claiming waits for one. Higher: webhooks beside a burst of workflow-starting
   * events (orders) keep arriving sooner, for more events held in memory and more lease renewals.
   */
  EVENT_DISPATCH_WAITING_PASSES: positiveInt.max(1000).default(100),
  /**
   * Outbox: the workflow task timeout of the dispatcher and of the workflows it starts (Temporal's
   * default); a worker that dies in the middle of one of their workflow tasks (a test event's or a
   * replay's first attempt is a local activity, run inside one) is noticed after this.
   */
  EVENT_WORKFLOW_TASK_TIMEOUT_MS: positiveInt.min(1000).max(120_000).default(10_000),
  /** Payments: how long POST /v3/payments/process waits for the gateway before answering 202. */
  PAYMENTS_SYNC_WAIT_MS: z.coerce.number().int().min(0).max(25_000).default(5000),
  /** Live-mode gateway for accounts that have not chosen one; default: stripe when STRIPE_API_KEY is set, else none (live payments refused). */
  PAYMENTS_LIVE_GATEWAY: z.enum(['sandbox', 'stripe', 'adyen', 'paypal']).optional(),
  /** Development only: let live-mode payments go through the sandbox gateway (no money moves). Logged as a warning at start. */
  PAYMENTS_LIVE_SANDBOX: bool.default(false),
  /** The HMAC key of card fingerprints; default: a key generated once per installation and kept in the database. */
  CARD_FINGERPRINT_KEY: z.string().min(32, 'use at least 32 characters (e.g. openssl rand -base64 32)').optional(),
  /** Risk score (0-100) at or above which a payment with fraud_protection is blocked. */
  PAYMENTS_RISK_BLOCK_THRESHOLD: z.coerce.number().int().min(0).max(100).default(75),
  /** How long the sandbox gateway's slow test card takes. */
  SANDBOX_GATEWAY_SLOW_CARD_MS: z.coerce.number().int().min(0).default(10_000),
  SANDBOX_GATEWAY_FEE_PERCENT: z.string().regex(/^\d{1,2}(\.\d{1,4})?$/, 'expected a percentage such as 2.9').default('2.9'),
  SANDBOX_GATEWAY_FEE_FIXED: z.coerce.number().int().min(0).default(30),
  STRIPE_API_KEY: z.string().regex(/^(sk|rk)_(test|live)_\w+$/, 'expected a Stripe secret key (sk_test_… or sk_live_…)').optional(),
  /** Another Stripe API base URL, e.g. stripe-mock's http://127.0.0.1:12111. */
  STRIPE_API_BASE: z.url().optional(),
  /** Adyen adapter: API key, merchant account, TEST or LIVE, the live endpoint prefix, and another Checkout host (a local double). */
  ADYEN_API_KEY: z.string().min(10).optional(),
  ADYEN_MERCHANT_ACCOUNT: z.string().min(1).max(100).optional(),
  ADYEN_ENVIRONMENT: z.enum(['TEST', 'LIVE']).default('TEST'),
  ADYEN_LIVE_PREFIX: z.string().regex(/^[a-z0-9-]+$/, 'the prefix Adyen assigns, e.g. 1797a841fbb37ca7-AdyenDemo').optional(),
  ADYEN_CHECKOUT_BASE: z.url().optional(),
  /** PayPal adapter: REST app client id and secret, sandbox or live, and another API host (a local double). */
  PAYPAL_CLIENT_ID: z.string().min(1).optional(),
  PAYPAL_CLIENT_SECRET: z.string().min(1).optional(),
  PAYPAL_ENVIRONMENT: z.enum(['sandbox', 'live']).default('sandbox'),
  PAYPAL_API_BASE: z.url().optional(),
  /** Billing: a subscription's workflow continues as new after this many billing cycles (bounded history). */
  BILLING_CYCLES_PER_RUN: z.coerce.number().int().min(1).max(1000).default(12),
  /** Analytics: the directory generated report files are written to (created if missing). */
  ANALYTICS_REPORTS_DIR: z.string().min(1).default('.data/reports'),
  /** Analytics: days a generated report file is kept before the retention workflow deletes it. */
  ANALYTICS_REPORT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
  /** Analytics: seconds a report's signed download_url stays valid. */
  ANALYTICS_DOWNLOAD_URL_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(3600),
  /** Analytics: an S3-compatible store for report files instead of ANALYTICS_REPORTS_DIR (path-style URLs, e.g. http://minio:9000). */
  ANALYTICS_S3_ENDPOINT: z.url().optional(),
  ANALYTICS_S3_BUCKET: z.string().min(3).max(63).optional(),
  ANALYTICS_S3_REGION: z.string().min(1).default('us-east-1'),
  ANALYTICS_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  ANALYTICS_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** /v3/ai: the language-model provider (unset: every /v3/ai route answers 503 ai_not_configured). */
  AI_PROVIDER: z.enum(['openai', 'openai-compatible']).optional(),
  /** /v3/ai: the model id, e.g. gpt-4.1-mini (or the name a local server gives its model). */
  AI_MODEL: z.string().min(1).max(200).optional(),
  /** /v3/ai: the provider's API key (OPENAI_API_KEY is read when AI_API_KEY is unset). */
  AI_API_KEY: z.string().min(1).optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  /** /v3/ai: the base URL of an OpenAI-compatible server (a local model server), e.g. http://127.0.0.1:11434/v1. */
  AI_BASE_URL: z.url().optional(),
  /** /v3/ai: tokens (in + out) each API key may use per calendar month (UTC) before 429 ai_budget_exceeded. */
  AI_MONTHLY_TOKEN_BUDGET: positiveInt.default(1_000_000),
  /** /v3/ai: longest one model call (all its steps) may take before 503 ai_provider_unavailable. */
  AI_TIMEOUT_MS: positiveInt.min(1000).default(60_000),
  /** /v3/graphql: answer introspection (GraphiQL's schema explorer) to live-mode keys too; off by default (test keys always may). */
  GRAPHQL_LIVE_INTROSPECTION: bool.default(false),
  /** GraphiQL at /graphiql (a page sending the key typed into it; schema docs need introspection, so test keys). */
  GRAPHQL_GRAPHIQL: bool.default(true),
}).superRefine((config, ctx) => {
  if (config.PAYMENTS_LIVE_GATEWAY === 'sandbox' && !config.PAYMENTS_LIVE_SANDBOX) {
    ctx.addIssue({
      code: 'custom', path: ['PAYMENTS_LIVE_GATEWAY'],
      message: 'the sandbox moves no money: live mode uses it only with PAYMENTS_LIVE_SANDBOX=true (development)',
    });
  }
  if (config.ADYEN_API_KEY && !config.ADYEN_MERCHANT_ACCOUNT) {
    ctx.addIssue({ code: 'custom', path: ['ADYEN_MERCHANT_ACCOUNT'], message: 'required with ADYEN_API_KEY (the merchant account payments are made for)' });
  }
  if (config.ANALYTICS_S3_ENDPOINT && !(config.ANALYTICS_S3_BUCKET && config.ANALYTICS_S3_ACCESS_KEY_ID && config.ANALYTICS_S3_SECRET_ACCESS_KEY)) {
    ctx.addIssue({ code: 'custom', path: ['ANALYTICS_S3_ENDPOINT'], message: 'needs ANALYTICS_S3_BUCKET, ANALYTICS_S3_ACCESS_KEY_ID and ANALYTICS_S3_SECRET_ACCESS_KEY' });
  }
  if (!!config.PAYPAL_CLIENT_ID !== !!config.PAYPAL_CLIENT_SECRET) {
    ctx.addIssue({ code: 'custom', path: ['PAYPAL_CLIENT_SECRET'], message: 'PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET are set together' });
  }
  if (config.AI_PROVIDER && !config.AI_MODEL) {
    ctx.addIssue({ code: 'custom', path: ['AI_MODEL'], message: 'required with AI_PROVIDER (the model to call)' });
  }
  if (config.AI_PROVIDER === 'openai' && !config.AI_API_KEY && !config.OPENAI_API_KEY) {
    ctx.addIssue({ code: 'custom', path: ['AI_API_KEY'], message: 'AI_PROVIDER=openai needs AI_API_KEY (or OPENAI_API_KEY)' });
  }
  if (config.AI_PROVIDER === 'openai-compatible' && !config.AI_BASE_URL) {
    ctx.addIssue({ code: 'custom', path: ['AI_BASE_URL'], message: 'AI_PROVIDER=openai-compatible needs the server\'s base URL, e.g. http://127.0.0.1:11434/v1' });
  }
});

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Parses the environment; throws a ConfigError naming every bad variable at once. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0]);
    return `${name}=${JSON.stringify(present[name] ?? '')}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/**
 * For process entry points: load the config or print the problems and exit, and apply the settings
 * that are the process's as a whole (V8's heap growth), before anything else runs.
 */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    const config = loadConfig(env);
    // A V8 flag, read at every full collection by every isolate of the process (workflow threads too).
    if (config.V8_HEAP_GROWING_PERCENT > 0) setFlagsFromString(`--heap-growing-percent=${config.V8_HEAP_GROWING_PERCENT}`);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}
