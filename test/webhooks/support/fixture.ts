import { expect } from 'vitest';
import type { EventType } from '../../../domain/events/catalog.ts';
import { recordEvent } from '../../../domain/events/outbox.ts';
import { scopedEm } from '../../../domain/scope.ts';
import { client } from '../../support/http.ts';
import { startTestPlatform, type TestPlatform } from '../../support/platform.ts';
import { startReceiver, type Receiver } from './receiver.ts';

/** A platform with a worker, one account and key, and helpers to drive deliveries to receivers. */
export interface WebhookFixture {
  platform: TestPlatform;
  http: ReturnType<typeof client>;
  key: string;
  accountId: string;
  /** A receiver on loopback, closed with the fixture. */
  receiver(): Promise<Receiver>;
  /** Registers an endpoint for `r` and hands it the endpoint's secret; returns the endpoint id. */
  endpointFor(r: Receiver, events?: string[]): Promise<string>;
  /** Records an event the way a domain service does (recordEvent in a flush); returns its id. */
  emit(type: EventType, object?: Record<string, unknown>, livemode?: boolean): Promise<string>;
  /** The delivery of `eventId` to `endpointId` with its attempts, or null while there is none. */
  delivery(endpointId: string, eventId: string): Promise<any>;
  close(): Promise<void>;
}

export async function startWebhookFixture(env: Record<string, string>): Promise<WebhookFixture> {
  const platform = await startTestPlatform({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env } });
  const http = client(platform.url);
  const accountId = await platform.newAccount();
  const key = await platform.newKey({ accountId });
  const receivers: Receiver[] = [];
  return {
    platform, http, key, accountId,
    async receiver() {
      const r = await startReceiver();
      receivers.push(r);
      return r;
    },
    async endpointFor(r, events = ['order.created']) {
      const res = await http('/v3/webhooks', { key, body: { url: r.url, events } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      r.secrets = [res.body.secret];
      return res.body.id;
    },
    async emit(type, object = { id: 'ord_x', object: 'order' }, livemode = false) {
      const em = scopedEm(platform.orm, { accountId, livemode });
      const event = recordEvent(em, { accountId, livemode }, { type, object });
      await em.flush();
      return event.id;
    },
    async delivery(endpointId, eventId) {
      const res = await http(`/v3/webhooks/${endpointId}/deliveries`, { key });
      const found = res.body.deliveries.find((d: { event_id: string }) => d.event_id === eventId);
      if (!found) return null;
      return (await http(`/v3/webhooks/${endpointId}/deliveries/${found.id}`, { key })).body;
    },
    async close() {
      for (const r of receivers) await r.close();
      await platform.close();
    },
  };
}
