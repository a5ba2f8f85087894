import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';

export const CALL_STATUSES = ['queued', 'initiated', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export const NUMBER_TYPES = ['local', 'toll_free', 'international'] as const;
export type NumberType = (typeof NUMBER_TYPES)[number];
export const NUMBER_FEATURES = ['sms', 'voice', 'fax'] as const;
export type NumberFeature = (typeof NUMBER_FEATURES)[number];
export const EXTENSION_STATUSES = ['available', 'busy', 'dnd', 'offline'] as const;
export type ExtensionStatus = (typeof EXTENSION_STATUSES)[number];
export const MESSAGING_APPS = ['whatsapp', 'sms', 'messenger'] as const;
export type MessagingApp = (typeof MESSAGING_APPS)[number];
export const MESSAGE_STATUSES = ['accepted', 'sent', 'delivered', 'read', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** A number the account rents from the carrier (E.164), with its features. */
export const PhoneNumber = defineEntity({
  name: 'PhoneNumber',
  tableName: 'comm_phone_numbers',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    number: p.string(),
    numberType: p.enum(NUMBER_TYPES),
    country: p.string(),
    areaCode: p.string().nullable(),
    features: p.json<NumberFeature[]>(),
    monthlyCost: p.bigint('number'),
    currency: p.string(),
    status: p.enum(['active', 'released'] as const),
    inboundSecret: p.string(),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    releasedAt: p.datetime().nullable(),
  },
});
export type PhoneNumber = InferEntity<typeof PhoneNumber>;

/** The account's regulatory address (international numbers need one on file). */
export const CommsAddress = defineEntity({
  name: 'CommsAddress',
  tableName: 'comm_addresses',
  filters: scopeFilter,
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    name: p.string(),
    line1: p.string(),
    city: p.string(),
    postalCode: p.string(),
    country: p.string(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type CommsAddress = InferEntity<typeof CommsAddress>;

/** An account's own per-minute rate for a destination country (the defaults apply otherwise). */
export const CallRate = defineEntity({
  name: 'CallRate',
  tableName: 'comm_call_rates',
  filters: scopeFilter,
  properties: {
    accountId: p.string().primary(),
    livemode: p.boolean().primary(),
    country: p.string().primary(),
    perMinute: p.bigint('number'),
    currency: p.string(),
    updatedAt: p.datetime(),
  },
});
export type CallRate = InferEntity<typeof CallRate>;

/** One outbound call, driven by the `call-<call_id>` workflow. */
export const Call = defineEntity({
  name: 'Call',
  tableName: 'comm_calls',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    toNumber: p.string(),
    fromNumber: p.string(),
    callerIdName: p.string().nullable(),
    recordCall: p.boolean(),
    ringTimeout: p.integer(),
    fallbackNumber: p.string().nullable(),
    extensionId: p.string().nullable(),
    status: p.enum(CALL_STATUSES),
    destinationCountry: p.string(),
    duration: p.integer().default(0),
    billedMinutes: p.integer().default(0),
    cost: p.bigint('number').default(0),
    ratePerMinute: p.bigint('number'),
    currency: p.string(),
    mos: p.string().columnType('numeric(3,2)').nullable(),
    jitterMs: p.string().columnType('numeric(8,2)').nullable(),
    packetLoss: p.string().columnType('numeric(6,3)').nullable(),
    latencyMs: p.string().columnType('numeric(8,2)').nullable(),
    recordingStatus: p.enum(['pending', 'ready', 'absent'] as const).nullable(),
    recordingDuration: p.integer().nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.text().nullable(),
    answeredAt: p.datetime().nullable(),
    endedAt: p.datetime().nullable(),
    workflowId: p.string(),
    requestIdempotencyKey: p.string().nullable(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Call = InferEntity<typeof Call>;

/** One dialed leg of a call: the primary leg, and at most one fallback leg. */
export const CallLeg = defineEntity({
  name: 'CallLeg',
  tableName: 'comm_call_legs',
  properties: {
    id: p.string().primary(),
    callId: p.string(),
    position: p.smallint(),
    role: p.enum(['primary', 'fallback'] as const),
    toNumber: p.string(),
    status: p.enum(CALL_STATUSES),
    carrierCallId: p.string().nullable(),
    duration: p.integer().default(0),
    answeredAt: p.datetime().nullable(),
    endedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type CallLeg = InferEntity<typeof CallLeg>;

export const Pbx = defineEntity({
  name: 'Pbx',
  tableName: 'comm_pbxs',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    name: p.string(),
    metadata: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Pbx = InferEntity<typeof Pbx>;

export const PbxExtension = defineEntity({
  name: 'PbxExtension',
  tableName: 'comm_pbx_extensions',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    pbxId: p.string(),
    extension: p.string(),
    userId: p.string().nullable(),
    status: p.enum(EXTENSION_STATUSES),
    forwardingEnabled: p.boolean(),
    forwardingDestination: p.string().nullable(),
    voicemailEnabled: p.boolean(),
    voicemailGreeting: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PbxExtension = InferEntity<typeof PbxExtension>;

export interface MessageTemplate {
  name: string;
  language: string;
  variables: string[];
}

/** A message sent through a messaging app (`message-<id>` workflow tracks its receipts). */
export const CommsMessage = defineEntity({
  name: 'CommsMessage',
  tableName: 'comm_messages',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    app: p.enum(MESSAGING_APPS),
    toAddress: p.string(),
    fromNumber: p.string(),
    text: p.text().nullable(),
    template: p.json<MessageTemplate>().nullable(),
    mediaUrl: p.text().nullable(),
    status: p.enum(MESSAGE_STATUSES),
    providerMessageId: p.string().nullable(),
    failureCode: p.string().nullable(),
    failureMessage: p.text().nullable(),
    workflowId: p.string(),
    requestIdempotencyKey: p.string().nullable(),
    sentAt: p.datetime().nullable(),
    deliveredAt: p.datetime().nullable(),
    readAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type CommsMessage = InferEntity<typeof CommsMessage>;

/** A message a recipient sent us: it opens (or renews) the 24-hour service window. */
export const InboundMessage = defineEntity({
  name: 'InboundMessage',
  tableName: 'comm_inbound_messages',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    app: p.string(),
    fromAddress: p.string(),
    toNumber: p.string(),
    text: p.text().nullable(),
    receivedAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type InboundMessage = InferEntity<typeof InboundMessage>;

/** What an operator did through the admin API, with who and why. */
export const CommsAdminAction = defineEntity({
  name: 'CommsAdminAction',
  tableName: 'comm_admin_actions',
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    livemode: p.boolean(),
    targetId: p.string(),
    action: p.string(),
    operator: p.string(),
    reason: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type CommsAdminAction = InferEntity<typeof CommsAdminAction>;
