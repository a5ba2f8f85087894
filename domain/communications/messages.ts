import { createHmac, timingSafeEqual } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { ApiError, notFound, validationFailed } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { recordEvent } from '../events/outbox.ts';
import { readScopedOr404, scopeColumns, type Scope } from '../scope.ts';
import type { MessageWorkflowInput } from '../../workflows/communications/shared.ts';
import { CommsMessage, InboundMessage, PhoneNumber, type MessageStatus, type MessagingApp } from './entities.ts';
import type { InboundMessageView, MessageView } from './schemas.ts';

/** Apps whose policy limits free text to 24 hours after the recipient's last message (customer-service window). */
export const WINDOWED_APPS: readonly MessagingApp[] = ['whatsapp', 'messenger'];
export const SERVICE_WINDOW_MS = 24 * 3600 * 1000;
/** How far a signed inbound message's timestamp may be from now (replays are refused). */
export const SIGNATURE_TOLERANCE_S = 300;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export function messageView(m: CommsMessage): MessageView {
  return {
    id: m.id, object: 'message', livemode: m.livemode, app: m.app, to: m.toAddress, from: m.fromNumber, text: m.text ?? null,
    template: m.template ?? null, media_url: m.mediaUrl ?? null, status: m.status,
    failure: m.failureCode ? { code: m.failureCode, message: m.failureMessage ?? '' } : null,
    workflow_id: m.workflowId, sent_at: iso(m.sentAt), delivered_at: iso(m.deliveredAt), read_at: iso(m.readAt),
    created_at: m.createdAt.toISOString(), updated_at: m.updatedAt.toISOString(),
  };
}

/** The sender must be one of the account's active numbers with the sms feature. */
export async function checkSender(em: EntityManager, from: string): Promise<void> {
  const number = await em.findOne(PhoneNumber, { number: from, status: 'active' });
  if (!number || !number.features.includes('sms')) {
    throw validationFailed([{
      path: 'from',
      message: number
        ? `${from} is provisioned without the sms feature, which messaging needs`
        : `${from} is not a sender this account has provisioned; provision a number with features ["sms"]`,
    }]);
  }
}

/** The end of the customer-service window for (app, recipient, sender), or null when none is open at `now`. */
export async function serviceWindowEnd(em: EntityManager, app: MessagingApp, to: string, from: string, now: Date): Promise<Date | null> {
  const last = await em.findOne(
    InboundMessage,
    { app, fromAddress: to, toNumber: from, receivedAt: { $lte: now } },
    { orderBy: { receivedAt: 'desc' } },
  );
  if (!last) return null;
  const end = new Date(last.receivedAt.getTime() + SERVICE_WINDOW_MS);
  return end > now ? end : null;
}

/** Free text outside the window is refused (422 `outside_service_window`); templates are always allowed. */
export async function checkServiceWindow(
  em: EntityManager, input: { app: MessagingApp; to: string; from: string; text: string | null; template: unknown }, now: Date,
): Promise<void> {
  if (!WINDOWED_APPS.includes(input.app) || input.template) return;
  if (await serviceWindowEnd(em, input.app, input.to, input.from, now)) return;
  throw new ApiError({
    status: 422, code: 'outside_service_window', title: 'Outside Service Window',
    detail: `Free text can be sent on ${input.app} only within 24 hours of the recipient's last message to ${input.from}; ${input.to} has not written in that time.`,
    suggestion: 'Send an approved template (`template` with name, language and variables) instead of `text`, or wait for the recipient to write.',
    errors: [{ path: 'text', message: 'free text is allowed only within 24 hours of the recipient\'s last inbound message; send a template instead' }],
  });
}

export async function findMessageByRequestKey(em: EntityManager, key: string): Promise<MessageView | null> {
  const m = await em.findOne(CommsMessage, { requestIdempotencyKey: key });
  return m ? messageView(m) : null;
}

export async function recordMessage(em: EntityManager, input: MessageWorkflowInput, workflowId: string): Promise<MessageView> {
  const existing = await em.findOne(CommsMessage, { id: input.messageId });
  if (existing) return messageView(existing);
  const m = em.create(CommsMessage, {
    id: input.messageId, ...scopeColumns(input), app: input.app, toAddress: input.to, fromNumber: input.from, text: input.text,
    template: input.template, mediaUrl: input.mediaUrl, status: 'accepted', providerMessageId: null, failureCode: null, failureMessage: null,
    workflowId, requestIdempotencyKey: input.requestIdempotencyKey, sentAt: null, deliveredAt: null, readAt: null,
  });
  await em.flush();
  return messageView(m);
}

export async function getMessageRow(em: EntityManager, id: string): Promise<CommsMessage> {
  const m = await em.findOne(CommsMessage, { id });
  if (!m) throw notFound('message', id);
  return m;
}

/** A message by id for GET /v3/communications/messages/{id}: one prepared statement, no EntityManager (readScopedOr404). */
export async function readMessage(orm: MikroORM, scope: Scope, id: string): Promise<MessageView> {
  return messageView(await readScopedOr404(orm, scope, CommsMessage, id, 'message'));
}

const MESSAGE_RANK: Record<MessageStatus, number> = { accepted: 0, sent: 1, delivered: 2, read: 3, failed: 4 };

/**
 * A status from the provider: only forwards (`read` implies `delivered`); `message.delivered` when
 * it is first delivered, `message.failed` when it fails. Repeated calls change nothing.
 */
export async function recordMessageStatus(
  em: EntityManager, scope: Scope,
  input: { messageId: string; status: MessageStatus; providerMessageId?: string | null; failureCode?: string | null; failureMessage?: string | null; requestId: string | null },
): Promise<MessageView> {
  return em.transactional(async (tx) => {
    const m = await tx.findOne(CommsMessage, { id: input.messageId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!m) throw notFound('message', input.messageId);
    if (input.providerMessageId && !m.providerMessageId) m.providerMessageId = input.providerMessageId;
    if (MESSAGE_RANK[input.status] <= MESSAGE_RANK[m.status] || m.status === 'failed') {
      await tx.flush();
      return messageView(m);
    }
    const now = new Date();
    const wasDelivered = m.status === 'delivered' || m.status === 'read';
    m.status = input.status;
    if (input.status !== 'failed') m.sentAt ??= now;
    if (input.status === 'delivered' || input.status === 'read') m.deliveredAt ??= now;
    if (input.status === 'read') m.readAt = now;
    if (input.status === 'failed') {
      m.failureCode = input.failureCode ?? 'failed';
      m.failureMessage = input.failureMessage ?? 'The provider could not deliver the message.';
    }
    m.updatedAt = now;
    await tx.flush();
    const view = messageView(m);
    if (input.status === 'failed') recordEvent(tx, scope, { type: 'message.failed', object: view, requestId: input.requestId });
    else if (!wasDelivered && (input.status === 'delivered' || input.status === 'read')) {
      recordEvent(tx, scope, { type: 'message.delivered', object: view, requestId: input.requestId });
    }
    await tx.flush();
    return view;
  });
}

// ---- Inbound messages (signed by the provider) ------------------------------------------------

/** `v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>` (Standard Webhooks), with the number's `whsec_` secret. */
export function signInbound(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

function signatureProblem(detail: string): ApiError {
  return new ApiError({
    status: 401, code: 'signature_invalid', title: 'Unauthorized', detail,
    suggestion: 'Sign `webhook-id.webhook-timestamp.body` (the body as compact JSON) with the receiving number\'s inbound_secret and send webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks).',
  });
}

/**
 * Records a recipient's message to one of our numbers, which (re)opens the service window. The
 * request must carry a Standard Webhooks signature made with that number's `inbound_secret`.
 */
export async function receiveInbound(
  em: EntityManager, scope: Scope,
  input: { app: MessagingApp; from: string; to: string; text: string | null; headers: Record<string, string | undefined>; signedBody: string; now: Date },
): Promise<InboundMessageView> {
  const number = await em.findOne(PhoneNumber, { number: input.to, status: 'active' });
  if (!number) throw validationFailed([{ path: 'to', message: `${input.to} is not an active number of this account` }]);
  const id = input.headers['webhook-id'];
  const timestamp = Number(input.headers['webhook-timestamp']);
  const signatures = (input.headers['webhook-signature'] ?? '').split(' ').filter(Boolean);
  if (!id || !Number.isInteger(timestamp) || signatures.length === 0) throw signatureProblem('The inbound message is not signed (webhook-id, webhook-timestamp and webhook-signature are required).');
  if (Math.abs(Date.now() / 1000 - timestamp) > SIGNATURE_TOLERANCE_S) throw signatureProblem('The signature\'s timestamp is more than 5 minutes from now (a replay, or a wrong clock).');
  const expected = Buffer.from(signInbound(number.inboundSecret, id, timestamp, input.signedBody));
  const ok = signatures.some((s) => {
    const given = Buffer.from(s);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!ok) throw signatureProblem('The inbound message\'s signature does not match the receiving number\'s inbound_secret.');
  const m = em.create(InboundMessage, {
    id: newId('commsMessage'), ...scopeColumns(scope), app: input.app, fromAddress: input.from, toNumber: input.to, text: input.text,
    receivedAt: input.now,
  });
  await em.flush();
  return {
    id: m.id, object: 'inbound_message', livemode: scope.livemode, app: input.app, from: input.from, to: input.to, text: input.text,
    received_at: m.receivedAt.toISOString(),
    service_window_ends_at: WINDOWED_APPS.includes(input.app) ? new Date(m.receivedAt.getTime() + SERVICE_WINDOW_MS).toISOString() : null,
  };
}
