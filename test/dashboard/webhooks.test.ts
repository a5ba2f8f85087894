import type { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { dashboardRouter } from '../../domain/dashboard/router.ts';
import type { DashboardRole } from '../../domain/dashboard/session.ts';
import { createCallerFactory } from '../../domain/dashboard/trpc.ts';
import type { TestPlatform } from '../support/platform.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

let platform: TestPlatform;
let http: Http;
let key: string;

// A worker makes the test delivery's one attempt (refused at once: nothing listens on port 9).
usePlatform({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_TIMEOUT_MS: '2000' } }, (t) => ({ platform, http, key } = t));

const createCaller = createCallerFactory(dashboardRouter);
function as(role: DashboardRole, accountId = platform.accountId) {
  return createCaller({
    orm: platform.orm, deps: platform.api.deps, csrfValid: true,
    session: { sessionId: 'ses_x', userId: 'usr_x', email: 'x@example.com', accountId, role, csrfToken: 'x' },
  });
}

describe('webhooks and events in the dashboard', () => {
  it('lists endpoints and deliveries, resends one for a developer and never for a viewer', async () => {
    const endpoint = await http('/v3/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
    expect(endpoint.status).toBe(201);
    const sent = await http(`/v3/webhooks/${endpoint.body.id}/test`, { key, body: { event_type: 'customer.updated' } });
    expect([200, 202]).toContain(sent.status);

    const viewer = as('viewer');
    expect((await viewer.webhooks.endpoints({ mode: 'test' })).map((e) => e.id)).toEqual([endpoint.body.id]);
    expect(await viewer.webhooks.endpoints({ mode: 'live' })).toEqual([]);
    const deliveries = await viewer.webhooks.deliveries({ mode: 'test', endpointId: endpoint.body.id });
    expect(deliveries.map((d) => d.id)).toEqual([sent.body.id]);
    expect(JSON.stringify(await viewer.webhooks.endpoints({ mode: 'test' }))).not.toContain('whsec_');

    const refused = await viewer.webhooks.resend({ mode: 'test', endpointId: endpoint.body.id, deliveryId: sent.body.id }).catch((e: unknown) => e);
    expect((refused as TRPCError).code).toBe('FORBIDDEN');
    const resent = await as('developer').webhooks.resend({ mode: 'test', endpointId: endpoint.body.id, deliveryId: sent.body.id });
    expect(resent).toMatchObject({ id: sent.body.id, webhook_id: endpoint.body.id });

    // Another account sees neither the endpoint nor its deliveries.
    const stranger = as('owner', await platform.newAccount());
    expect(await stranger.webhooks.endpoints({ mode: 'test' })).toEqual([]);
    const hidden = await stranger.webhooks.deliveries({ mode: 'test', endpointId: endpoint.body.id }).catch((e: unknown) => e);
    expect((hidden as TRPCError).code).toBe('NOT_FOUND');
  });

  it('lists the account’s events of a mode, filtered by type', async () => {
    const customer = await http('/v3/customers', { key, body: { email: 'events@example.com', name: 'Eve Vents', customer_type: 'b2c' } });
    expect(customer.status).toBe(201);
    expect((await http(`/v3/customers/${customer.body.id}`, { key, method: 'PATCH', body: { name: 'Eve Ventura' } })).status).toBe(200);
    const events = await as('viewer').events.list({ mode: 'test', type: 'customer.*' });
    expect(events.map((e) => e.type)).toContain('customer.updated');
    expect(await as('viewer').events.list({ mode: 'live' })).toEqual([]);
    expect(await as('viewer').events.list({ mode: 'test', type: 'payment.succeeded' })).toEqual([]);
  });
});
