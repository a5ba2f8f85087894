import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { callSchema, messageSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
const end = '2025-03-14T09:30:34.000Z';
type Call = z.input<typeof callSchema>;
type Message = z.input<typeof messageSchema>;

const callExample = (status: Call['status'], recording: Call['recording'] = null): Call => ({
  id: 'call_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'call', livemode: false, status, to_number: '+14155550123', from_number: '+14155550100',
  caller_id_name: 'Acme Support', record_call: recording !== null, routing_options: { ring_timeout: 30, fallback_number: null }, extension_id: null,
  legs: [{
    id: 'leg_01jpa7v0f4j6kn8r1w3y5a7c9f', object: 'call_leg', role: 'primary', to_number: '+14155550123', status,
    duration: status === 'completed' ? 30 : 0, answered_at: status === 'completed' ? ts : null, ended_at: status === 'initiated' ? null : end,
  }],
  duration: status === 'completed' ? 30 : 0, billed_minutes: status === 'completed' ? 1 : 0, cost: status === 'completed' ? 2 : 0,
  rate_per_minute: 2, currency: 'USD',
  quality: status === 'completed' ? { mos: 4.35, jitter: 5.1, packet_loss: 0.24, latency: 61 } : null,
  recording,
  failure: status === 'busy' ? { code: 'busy', message: 'The destination was busy.' } : null,
  answered_at: status === 'completed' ? ts : null, ended_at: status === 'initiated' ? null : end,
  workflow_id: 'call-call_01jpa7v0f4j6kn8r1w3y5a7c9e', metadata: {}, created: ts, created_at: ts, updated_at: end,
});

const messageExample = (status: Message['status']): Message => ({
  id: 'cmsg_01jpa7v0f4j6kn8r1w3y5a7c9e', object: 'message', livemode: false, app: 'whatsapp', to: '+14155550123', from: '+14155550100',
  text: 'Your order has shipped.', template: null, media_url: null, status,
  failure: status === 'failed' ? { code: 'undeliverable', message: 'The provider could not deliver the message.' } : null,
  workflow_id: 'message-cmsg_01jpa7v0f4j6kn8r1w3y5a7c9e', sent_at: ts, delivered_at: status === 'failed' ? null : end, read_at: null,
  created_at: ts, updated_at: end,
});

/** Events the communications area records. */
export const communicationsEvents = [
  eventKind({
    type: 'call.initiated', aboutCustomer: false, schema: callSchema,
    description: 'The carrier started placing a call (its first leg left `queued`).',
    example: callExample('initiated'),
  }),
  eventKind({
    type: 'call.completed', aboutCustomer: false, schema: callSchema,
    description: 'A call was answered and has ended: duration, cost and quality are final.',
    example: callExample('completed', { status: 'pending', url: null }),
  }),
  eventKind({
    type: 'call.failed', aboutCustomer: false, schema: callSchema,
    description: 'A call ended without being answered: `busy`, `no_answer`, `failed` or `canceled` (after any fallback leg).',
    example: callExample('busy'),
  }),
  eventKind({
    type: 'call.recording.ready', aboutCustomer: false, schema: callSchema,
    description: 'A recorded call\'s recording can be downloaded (GET /v3/communications/calls/{id}/recording).',
    example: callExample('completed', { status: 'ready', url: '/v3/communications/calls/call_01jpa7v0f4j6kn8r1w3y5a7c9e/recording' }),
  }),
  eventKind({
    type: 'message.delivered', aboutCustomer: false, schema: messageSchema,
    description: 'A messaging-app message reached the recipient\'s device.',
    example: messageExample('delivered'),
  }),
  eventKind({
    type: 'message.failed', aboutCustomer: false, schema: messageSchema,
    description: 'A messaging-app message could not be delivered.',
    example: messageExample('failed'),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof communicationsEvents)[number]['type'], true> {}
}
