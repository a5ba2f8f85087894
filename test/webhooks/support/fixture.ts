import { afterAll, expect } from 'vitest';
import type { EventType } from '../../../domain/events/catalog.ts';
import { recordEvent } from '../../../domain/events/outbox.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { usePlatform, type PlatformContext } from '../../support/use-platform.ts';
import { startReceiver, type Receiver } from './receiver.ts';

/**
 * A platform with a worker and an account and key of its own (usePlatform), and helpers to drive
 * deliveries to receivers. The helpers can be destructured at once (they work once the platform has
 * started); `platform`, `http`, `key` and `accountId` are filled in before the file's tests.
 */
export interface WebhookFixture extends PlatformContext {
  /** A receiver on loopback, closed after the file's tests. */
  receiver(): Promise<Receiver>;
  /** Registers an endpoint for `r` and hands it the endpoint's secret; returns the endpoint id. */
  endpointFor(r: Receiver, events?: string[]): Promise<string>;
  /** Records an event the way a domain service does (recordEvent in a flush); returns its id. */
  emit(type: EventType, object?: Record<string, unknown>, livemode?: boolean): Promise<string>;
  /** The delivery of `eventId` to `endpointId` with its attempts, or null while there is none. */
  delivery(endpointId: string, eventId: string): Promise<any>;
}

export function useWebhookFixture(env: Record<string, string>, ready?: (fx: WebhookFixture) => unknown): WebhookFixture {
  const receivers: Receiver[] = [];
  const t = usePlatform({ worker: true, ownAccount: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env } }, () => ready?.(fixture));
  afterAll(async () => {
    for (const r of receivers) await r.close();
  });
  const fixture: WebhookFixture = Object.assign(t, {
    async receiver() {
      const r = await startReceiver();
      receivers.push(r);
      return r;
    },
    async endpointFor(r: Receiver, events = ['order.created']) {
      const res = await t.http('/v3/webhooks', { key: t.key, body: { url: r.url, events } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      r.secrets = [res.body.secret];
      return res.body.id;
    },
    async emit(type: EventType, object: Record<string, unknown> = { id: 'ord_x', object: 'order' }, livemode = false) {
      const em = scopedEm(t.platform.orm, { accountId: t.accountId, livemode });
      const event = recordEvent(em, { accountId: t.accountId, livemode }, { type, object });
      await em.flush();
      return event.id;
    },
    async delivery(endpointId: string, eventId: string) {
      const res = await t.http(`/v3/webhooks/${endpointId}/deliveries`, { key: t.key });
      const found = res.body.deliveries.find((d: { event_id: string }) => d.event_id === eventId);
      if (!found) return null;
      return (await t.http(`/v3/webhooks/${endpointId}/deliveries/${found.id}`, { key: t.key })).body;
    },
  });
  return fixture;
}
