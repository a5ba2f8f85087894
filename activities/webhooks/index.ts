import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import { runDeliveryAttempt } from '../../domain/webhooks/delivery.ts';
import type { Resolver } from '../../domain/webhooks/destination.ts';
import type { WebhookTransport } from '../../domain/webhooks/sender.ts';
import { retryPolicy } from '../../domain/webhooks/retry-schedule.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { AttemptInput, AttemptResult, DeliverySettings } from '../../workflows/webhooks/shared.ts';

export interface WebhookActivityDeps {
  orm: MikroORM;
  config: Config;
  logger?: Logger;
  /** DNS for the SSRF guard; the system resolver unless a test supplies one. */
  webhookResolver?: Resolver;
  /** A test's way to its own TLS receiver (the worker's `services`); see WebhookTransport. */
  webhookTransport?: WebhookTransport;
}

/** Activities of the webhooks area (delivery attempts), built over their dependencies. */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const retry = retryPolicy(deps.config);
  return {
    /** A local activity: the settings the delivery workflow sizes its activity timeouts with. */
    async deliverySettings(): Promise<DeliverySettings> {
      return { timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS, heartbeatTimeoutMs: deps.config.WEBHOOK_HEARTBEAT_TIMEOUT_MS };
    },

    async attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
      const ctx = Context.current();
      return runDeliveryAttempt({
        orm: deps.orm,
        timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
        retry,
        allowPrivateNetworks: deps.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        resolver: deps.webhookTransport?.resolver ?? deps.webhookResolver,
        ca: deps.webhookTransport?.ca,
        allowAddresses: deps.webhookTransport?.allowAddresses,
        logger: deps.logger,
        heartbeat: () => ctx.heartbeat(),
        heartbeatEveryMs: Math.max(200, Math.floor(deps.config.WEBHOOK_HEARTBEAT_TIMEOUT_MS / 4)),
      }, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
