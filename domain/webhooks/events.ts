import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { endpointSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
type Endpoint = z.input<typeof endpointSchema>;

const endpointExample = (state: Pick<Endpoint, 'enabled' | 'status' | 'disabled_reason' | 'failing_since'>): Endpoint => ({
  id: 'whk_01jpa83q7s9v1x3z5b7d9f1h3k', object: 'webhook_endpoint', livemode: false, url: 'https://example.com/hooks',
  description: null, events: ['*'], ...state, previous_secret_expires_at: null, metadata: {}, created_at: ts, updated_at: ts,
});

/** Events the webhooks area records. */
export const webhookEvents = [
  eventKind({
    type: 'webhook_endpoint.failing', aboutCustomer: false, schema: endpointSchema,
    description: 'An endpoint failed every attempt of a delivery for the whole retry window; it stays enabled and is marked failing until a delivery succeeds.',
    example: endpointExample({ enabled: true, status: 'failing', disabled_reason: null, failing_since: ts }),
  }),
  eventKind({
    type: 'webhook_endpoint.disabled', aboutCustomer: false, schema: endpointSchema,
    description: 'An endpoint was disabled because its receiver answered 410 Gone.',
    example: endpointExample({ enabled: false, status: 'disabled', disabled_reason: 'gone', failing_since: null }),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof webhookEvents)[number]['type'], true> {}
}
