import { describe, expect, it } from 'vitest';
import type { TestPlatform } from '../support/platform.ts';
import { newId } from '../../platform/ids.ts';
import type { Http } from '../support/use-platform.ts';
import { useWebhookFixture } from './support/fixture.ts';
import { eventually } from './support/receiver.ts';

/** The SSRF guard when deliveries are attempted (at creation: endpoints.test.ts; the rules: units.test.ts). */
let platform: TestPlatform;
let http: Http;
let accountId: string;

const { receiver, endpointFor, emit, delivery } = useWebhookFixture(
  { WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', WEBHOOK_RETRY_JITTER: '0', WEBHOOK_TIMEOUT_MS: '1000' },
  (fx) => ({ platform, http, accountId } = fx),
);
describe('the SSRF guard at delivery time', () => {
  it('does not follow redirects: a 3xx is a failed attempt and the redirect target is never contacted', async () => {
    const target = await receiver();
    const r = await receiver();
    r.reply = () => ({ status: 302, headers: { location: target.url } });
    const endpointId = await endpointFor(r);
    const eventId = await emit('order.created');
    await r.waitFor(3);
    const d = await eventually(async () => {
      const found = await delivery(endpointId, eventId);
      return found?.status === 'failed' && found.next_retry === null ? found : null;
    });
    expect(d.http_status).toBe(302);
    expect(d.last_error).toContain('not followed');
    expect(target.received).toHaveLength(0);
    expect(target.connections).toBe(0);
  });

  it('refuses, at every attempt, a live-mode endpoint whose name resolves to loopback, and never connects', async () => {
    // A live endpoint whose name resolved to a public address when it was created and to loopback
    // now (DNS rebinding): written directly, since the API would refuse it at creation.
    const r = await receiver();
    const endpointId = newId('webhookEndpoint');
    await platform.sql(
      `insert into webhook_endpoints (id, account_id, livemode, url, events, secret, metadata, created_at, updated_at)
       values ($1, $2, true, $3, '{order.fulfilled}', $4, '{}', now(), now())`,
      [endpointId, accountId, `https://localhost:${r.port}/hooks`, `whsec_${Buffer.alloc(32, 1).toString('base64')}`],
    );
    const eventId = await emit('order.fulfilled', { id: 'ord_live', object: 'order' }, true);
    const liveKey = await platform.newKey({ accountId, type: 'live' });
    const d = await eventually(async () => {
      const list = await http(`/v3/webhooks/${endpointId}/deliveries`, { key: liveKey });
      const found = list.body.deliveries?.find((x: { event_id: string }) => x.event_id === eventId);
      return found?.status === 'failed' && found.next_retry === null ? found : null;
    });
    expect(d.attempts).toBe(3);
    expect(d.http_status).toBeNull();
    expect(d.last_error).toContain('loopback');
    const detail = await http(`/v3/webhooks/${endpointId}/deliveries/${d.id}`, { key: liveKey });
    expect(detail.body.attempt_history.every((a: { outcome: string }) => a.outcome === 'refused')).toBe(true);
    expect(r.connections).toBe(0);
  });

  it('refuses plain http in live mode whatever the server setting says', async () => {
    const r = await receiver();
    const endpointId = newId('webhookEndpoint');
    await platform.sql(
      `insert into webhook_endpoints (id, account_id, livemode, url, events, secret, metadata, created_at, updated_at)
       values ($1, $2, true, $3, '{order.created}', $4, '{}', now(), now())`,
      [endpointId, accountId, r.url, `whsec_${Buffer.alloc(32, 2).toString('base64')}`],
    );
    const eventId = await emit('order.created', { id: 'ord_live2', object: 'order' }, true);
    const liveKey = await platform.newKey({ accountId, type: 'live' });
    const d = await eventually(async () => {
      const list = await http(`/v3/webhooks/${endpointId}/deliveries`, { key: liveKey });
      const found = list.body.deliveries?.find((x: { event_id: string }) => x.event_id === eventId);
      return found?.status === 'failed' && found.next_retry === null ? found : null;
    });
    expect(d.last_error).toContain('https');
    expect(r.connections).toBe(0);
  });
});
