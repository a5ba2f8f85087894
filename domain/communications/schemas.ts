import { z } from 'zod';

/**
 * The communications area's resources, declared once: each zod schema is what the routes answer
 * with (and what the OpenAPI document and the event catalog show). Pure: zod only.
 */
const callStatus = z.enum(['queued', 'initiated', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled']);

export const callLegSchema = z.object({
  id: z.string(), object: z.literal('call_leg'), role: z.enum(['primary', 'fallback']), to_number: z.string(), status: callStatus,
  duration: z.number().int().describe('Talk time in seconds.'),
  answered_at: z.iso.datetime().nullable(), ended_at: z.iso.datetime().nullable(),
}).meta({ id: 'CallLeg' });

export const callSchema = z.object({
  id: z.string(),
  object: z.literal('call'),
  livemode: z.boolean(),
  status: callStatus,
  to_number: z.string(),
  from_number: z.string(),
  caller_id_name: z.string().nullable(),
  record_call: z.boolean(),
  routing_options: z.object({ ring_timeout: z.number().int(), fallback_number: z.string().nullable() }),
  extension_id: z.string().nullable().describe('The PBX extension the call connects (busy while the call is in progress).'),
  legs: z.array(callLegSchema),
  duration: z.number().int().describe('Talk time of the connected leg, in seconds.'),
  billed_minutes: z.number().int().describe('Started minutes of talk time.'),
  cost: z.number().int().describe('Minor units of `currency`: billed_minutes × rate_per_minute.'),
  rate_per_minute: z.number().int().describe('Minor units, by the destination country (the account\'s own rate or the default).'),
  currency: z.string(),
  quality: z.object({
    mos: z.number().describe('Mean opinion score 1–4.5 (simplified ITU-T G.107 E-model).'),
    jitter: z.number().describe('Average jitter, ms.'),
    packet_loss: z.number().describe('Average packet loss, percent.'),
    latency: z.number().describe('Average one-way latency, ms.'),
  }).nullable(),
  recording: z.object({ status: z.enum(['pending', 'ready', 'absent']), url: z.string().nullable() }).nullable(),
  failure: z.object({ code: z.string(), message: z.string() }).nullable(),
  answered_at: z.iso.datetime().nullable(),
  ended_at: z.iso.datetime().nullable(),
  workflow_id: z.string(),
  metadata: z.record(z.string(), z.string()),
  created: z.iso.datetime(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
}).meta({ id: 'Call' });

export const phoneNumberSchema = z.object({
  id: z.string(),
  object: z.literal('phone_number'),
  livemode: z.boolean(),
  number: z.string().describe('E.164.'),
  number_type: z.enum(['local', 'toll_free', 'international']),
  country: z.string(),
  area_code: z.string().nullable(),
  features: z.array(z.enum(['sms', 'voice', 'fax'])),
  monthly_cost: z.number().int().describe('Minor units of `currency`.'),
  currency: z.string(),
  status: z.enum(['active', 'released']),
  inbound_secret: z.string().nullable().describe('Signs inbound messages to this number (Standard Webhooks); shown only when the number is provisioned.'),
  metadata: z.record(z.string(), z.string()),
  created_at: z.iso.datetime(),
  released_at: z.iso.datetime().nullable(),
}).meta({ id: 'PhoneNumber' });

export const availableNumberSchema = z.object({
  object: z.literal('available_phone_number'), number: z.string(), number_type: z.enum(['local', 'toll_free', 'international']),
  country: z.string(), area_code: z.string().nullable(), monthly_cost: z.number().int(), currency: z.string(),
}).meta({ id: 'AvailablePhoneNumber' });

export const availableNumbersSchema = z.object({
  object: z.literal('list'), data: z.array(availableNumberSchema), has_more: z.boolean(), next_cursor: z.string().nullable(), url: z.string(),
}).meta({ id: 'AvailablePhoneNumberList' });

export const addressSchema = z.object({
  object: z.literal('regulatory_address'), livemode: z.boolean(), name: z.string(), line1: z.string(), city: z.string(),
  postal_code: z.string(), country: z.string(), updated_at: z.iso.datetime(),
}).meta({ id: 'RegulatoryAddress' });

export const pbxSchema = z.object({
  id: z.string(), object: z.literal('pbx'), livemode: z.boolean(), name: z.string(), extension_count: z.number().int(),
  metadata: z.record(z.string(), z.string()), created_at: z.iso.datetime(),
}).meta({ id: 'Pbx' });

export const pbxExtensionSchema = z.object({
  id: z.string(),
  object: z.literal('pbx_extension'),
  pbx_id: z.string(),
  extension: z.string().describe('3–6 digits, unique in its PBX.'),
  user_id: z.string().nullable(),
  status: z.enum(['available', 'busy', 'dnd', 'offline']),
  forwarding: z.object({ enabled: z.boolean(), destination: z.string().nullable() }),
  voicemail: z.object({ enabled: z.boolean(), greeting: z.string().nullable() }),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
}).meta({ id: 'PbxExtension' });

export const pbxExtensionListSchema = z.object({
  object: z.literal('pbx_extension_list'),
  pbx_id: z.string(),
  extensions: z.array(pbxExtensionSchema),
  total_count: z.number().int(),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
}).meta({ id: 'PbxExtensionListing' });

export const callAnalyticsSchema = z.object({
  object: z.literal('call_analytics'),
  period: z.enum(['day', 'week', 'month', 'custom']),
  start: z.iso.datetime().describe('Inclusive.'),
  end: z.iso.datetime().describe('Exclusive.'),
  time_zone: z.string(),
  total_calls: z.number().int(),
  completed_calls: z.number().int(),
  total_duration: z.number().int().describe('Seconds of talk time.'),
  average_duration: z.number().describe('Seconds per completed call (0 without one).'),
  call_quality: z.object({
    average_mos: z.number().nullable(), jitter_avg: z.number().nullable(), packet_loss: z.number().nullable(),
  }),
  costs: z.object({
    total: z.number().int().describe('Minor units of `currency`.'),
    per_minute: z.number().int().describe('Total cost ÷ billed minutes, rounded half-even (0 without a billed minute).'),
    billed_minutes: z.number().int(),
    currency: z.string(),
  }),
  by_status: z.record(z.string(), z.number().int()),
}).meta({ id: 'CallAnalytics' });

export const messageSchema = z.object({
  id: z.string(),
  object: z.literal('message'),
  livemode: z.boolean(),
  app: z.enum(['whatsapp', 'sms', 'messenger']),
  to: z.string(),
  from: z.string(),
  text: z.string().nullable(),
  template: z.object({ name: z.string(), language: z.string(), variables: z.array(z.string()) }).nullable(),
  media_url: z.string().nullable(),
  status: z.enum(['accepted', 'sent', 'delivered', 'read', 'failed']),
  failure: z.object({ code: z.string(), message: z.string() }).nullable(),
  workflow_id: z.string(),
  sent_at: z.iso.datetime().nullable(),
  delivered_at: z.iso.datetime().nullable(),
  read_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
}).meta({ id: 'Message' });

export const inboundMessageSchema = z.object({
  id: z.string(), object: z.literal('inbound_message'), livemode: z.boolean(), app: z.enum(['whatsapp', 'sms', 'messenger']),
  from: z.string(), to: z.string(), text: z.string().nullable(), received_at: z.iso.datetime(),
  service_window_ends_at: z.iso.datetime().nullable().describe('Free text may be sent to `from` until then (WhatsApp and Messenger).'),
}).meta({ id: 'InboundMessage' });

export const callRatesSchema = z.object({
  object: z.literal('call_rate_table'),
  currency: z.string(),
  default_per_minute: z.number().int().describe('Minor units per started minute for destinations not listed.'),
  rates: z.array(z.object({ country: z.string(), per_minute: z.number().int(), source: z.enum(['account', 'default']) })),
}).meta({ id: 'CallRateTable' });

export type CallView = z.output<typeof callSchema>;
export type CallLegView = z.output<typeof callLegSchema>;
export type PhoneNumberView = z.output<typeof phoneNumberSchema>;
export type PbxView = z.output<typeof pbxSchema>;
export type PbxExtensionView = z.output<typeof pbxExtensionSchema>;
export type CallAnalyticsView = z.output<typeof callAnalyticsSchema>;
export type MessageView = z.output<typeof messageSchema>;
export type InboundMessageView = z.output<typeof inboundMessageSchema>;
