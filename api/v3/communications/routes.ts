import type { Request } from 'express';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { callAnalytics } from '../../../domain/communications/analytics.ts';
import { getCall, listCalls, rateTable, recordingSource } from '../../../domain/communications/calls.ts';
import { MESSAGING_APPS, type MessagingApp } from '../../../domain/communications/entities.ts';
import { readMessage, receiveInbound } from '../../../domain/communications/messages.ts';
import {
  MONTHLY_COST, availableNumbers, carrierFor, listNumbers, provisionNumber, readNumber, putAddress, releaseNumber,
} from '../../../domain/communications/numbers.ts';
import {
  createExtension, createPbx, deleteExtension, getExtension, getPbx, listExtensions, updateExtension,
} from '../../../domain/communications/pbx.ts';
import { phoneCountry, phoneNumber } from '../../../domain/communications/phone.ts';
import {
  addressSchema, availableNumbersSchema, callAnalyticsSchema, callRatesSchema, callSchema, inboundMessageSchema, messageSchema, pbxExtensionListSchema,
  pbxExtensionSchema, pbxSchema, phoneNumberSchema,
} from '../../../domain/communications/schemas.ts';
import { hangupCall, requestNow, sendMessage, startCall, type CommsContext } from '../../../domain/communications/service.ts';
import { ApiError, validationFailed } from '../../../platform/errors.ts';
import type { AppDeps } from '../../http/deps.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { getRoute, route } from '../../http/route.ts';
import { csv, dateOrTimestamp, isoDate, metadata } from '../../http/schemas.ts';

const id = z.string().min(1).max(64);
const callParams = z.strictObject({ call_id: id });
const pbxParams = z.strictObject({ pbx_id: id });
const extensionParams = z.strictObject({ pbx_id: id, extension_id: id });
const numberParams = z.strictObject({ number_id: id });
const appParams = z.strictObject({ messaging_app: z.string().min(1).max(64) });
const text = (max: number) => z.string().min(1).max(max);

const statusList = z.enum(['queued', 'initiated', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled']);

const callBody = z.strictObject({
  to_number: phoneNumber,
  from_number: phoneNumber.describe('One of the account\'s provisioned numbers with the voice feature.'),
  caller_id_name: z.string().min(1).max(15, 'caller ID names are at most 15 characters (CNAM)').optional(),
  record_call: z.boolean().default(false),
  routing_options: z.strictObject({
    ring_timeout: z.number().int('ring_timeout is a whole number of seconds').min(5, 'ring_timeout is at least 5 seconds').max(120, 'ring_timeout is at most 120 seconds').default(30)
      .describe('Seconds to let it ring before the call ends as no_answer (default 30).'),
    fallback_number: phoneNumber.optional().describe('Dialed once when the call is busy, unanswered or failed.'),
  }).optional(),
  extension_id: id.optional().describe('A PBX extension the call connects: it must be available, and is busy while the call is in progress.'),
  metadata: metadata.optional(),
});

const extensionNumber = z.string().regex(/^[0-9]{3,6}$/, 'an extension is 3 to 6 digits, e.g. 101');
const extensionStatus = z.enum(['available', 'busy', 'dnd', 'offline']);
const extensionBody = z.strictObject({
  extension: extensionNumber,
  user_id: text(64).optional(),
  status: extensionStatus.default('available'),
  forwarding: z.strictObject({ enabled: z.boolean(), destination: phoneNumber.optional() }).optional(),
  voicemail: z.strictObject({ enabled: z.boolean(), greeting: z.string().max(500).optional() }).optional(),
});
const extensionPatch = z.strictObject({
  extension: extensionNumber.optional(),
  user_id: text(64).nullable().optional(),
  status: extensionStatus.optional(),
  forwarding: z.strictObject({ enabled: z.boolean().optional(), destination: phoneNumber.nullable().optional() }).optional(),
  voicemail: z.strictObject({ enabled: z.boolean().optional(), greeting: z.string().max(500).nullable().optional() }).optional(),
});

const country = phoneCountry;
const areaCode = z.string().regex(/^[2-9][0-9]{2}$/, 'expected a three-digit North American area code such as 415');
const features = z.array(z.enum(['sms', 'voice', 'fax'])).min(1, 'name at least one feature: sms, voice or fax').max(3);
const provisionBody = z.strictObject({
  number_type: z.enum(['local', 'toll_free', 'international']),
  area_code: areaCode.optional().describe('For local numbers (required there).'),
  country: country.optional().describe('For international numbers (required there); they also need the account\'s address on file.'),
  features,
  metadata: metadata.optional(),
});

const templateBody = z.strictObject({
  name: z.string().regex(/^[a-z0-9_]{1,512}$/, 'template names are lower-case letters, digits and underscores'),
  language: z.string().regex(/^[a-z]{2}(_[A-Z]{2})?$/, 'expected a language code such as en or en_US'),
  variables: z.array(z.string().max(1024)).max(20).default([]),
});
const sendBody = z.strictObject({
  to: z.string().min(1).max(64).describe('E.164 for whatsapp and sms; the recipient\'s page-scoped id for messenger.'),
  from: phoneNumber.describe('A provisioned number of the account with the sms feature.'),
  text: z.string().min(1).max(4096).optional(),
  template: templateBody.optional(),
  media_url: z.url({ protocol: /^https$/, error: 'media_url must be an https:// URL' }).max(2048).optional(),
  test_clock: id.optional().describe('Test mode: decide the service window at this test clock\'s time.'),
}).superRefine((b, ctx) => {
  if (!b.text && !b.template) ctx.addIssue({ code: 'custom', path: ['text'], message: 'send either text or a template' });
  if (b.text && b.template) ctx.addIssue({ code: 'custom', path: ['template'], message: 'send either text or a template, not both' });
});
const inboundBody = z.strictObject({
  from: z.string().min(1).max(64), to: phoneNumber, text: z.string().max(4096).optional(), test_clock: id.optional(),
});

function context(deps: AppDeps, em: EntityManager): CommsContext {
  return { em, temporal: deps.temporal, telephony: deps.telephony };
}

function requestKey(req: Request): string | null {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' && key ? key : null;
}

/** `{messaging_app}`: one of the apps, else 404 naming them. */
function messagingApp(value: string): MessagingApp {
  if ((MESSAGING_APPS as readonly string[]).includes(value)) return value as MessagingApp;
  throw new ApiError({
    status: 404, code: 'messaging_app_not_found', title: 'Not Found',
    detail: `There is no messaging app '${value}'.`,
    suggestion: `Use one of: ${MESSAGING_APPS.join(', ')}.`,
    extensions: { messaging_apps: [...MESSAGING_APPS] },
  });
}

function checkRecipient(app: MessagingApp, to: string): string {
  if (app === 'messenger') {
    if (!/^[0-9]{5,20}$/.test(to)) throw validationFailed([{ path: 'to', message: 'a Messenger recipient is a page-scoped id (5–20 digits)' }]);
    return to;
  }
  const parsed = phoneNumber.safeParse(to);
  if (!parsed.success) throw validationFailed([{ path: 'to', message: parsed.error.issues[0]!.message }]);
  return parsed.data;
}

function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const analyticsQuery = z.strictObject({
  period: z.enum(['day', 'week', 'month', 'custom']).default('day'),
  start: isoDate.optional().describe('custom: first day (inclusive).'),
  end: isoDate.optional().describe('custom: last day (inclusive).'),
  time_zone: z.string().max(64).default('UTC').refine(validTimeZone, 'expected an IANA time zone such as Europe/Berlin or UTC'),
}).superRefine((q, ctx) => {
  if (q.period === 'custom') {
    if (!q.start) ctx.addIssue({ code: 'custom', path: ['start'], message: 'period=custom needs start (YYYY-MM-DD)' });
    if (!q.end) ctx.addIssue({ code: 'custom', path: ['end'], message: 'period=custom needs end (YYYY-MM-DD)' });
    if (q.start && q.end && q.end < q.start) ctx.addIssue({ code: 'custom', path: ['end'], message: 'end is before start' });
    if (q.start && q.end && Date.parse(q.end) - Date.parse(q.start) > 366 * 86_400_000) ctx.addIssue({ code: 'custom', path: ['end'], message: 'a custom period spans at most 366 days' });
  } else if (q.start || q.end) {
    ctx.addIssue({ code: 'custom', path: [q.start ? 'start' : 'end'], message: 'start and end apply to period=custom only' });
  }
});

export const communicationsRoutes = [
  // ---- Calls ---------------------------------------------------------------------------------
  route({
    method: 'post', path: '/v3/communications/calls', operationId: 'createCall', tag: 'Communications',
    summary: 'Place a call (201 once it is queued; its workflow follows the carrier to the end)',
    permission: 'communications:write', status: 201, temporal: true, body: callBody, response: callSchema,
    async handler({ deps, em, auth, body, req, requestId, resourceId }) {
      const call = await startCall(context(deps, em()), auth, {
        callId: await resourceId('call'), toNumber: body.to_number, fromNumber: body.from_number, callerIdName: body.caller_id_name ?? null,
        recordCall: body.record_call, ringTimeout: body.routing_options?.ring_timeout ?? 30, fallbackNumber: body.routing_options?.fallback_number ?? null,
        extensionId: body.extension_id ?? null,
        metadata: body.metadata ?? {}, requestIdempotencyKey: requestKey(req), requestId,
      });
      return { body: call, headers: { Location: `/v3/communications/calls/${call.id}` } };
    },
  }),
  listRoute({
    path: '/v3/communications/calls', operationId: 'listCalls', tag: 'Communications', summary: 'List calls, newest first',
    permission: 'communications:read', item: callSchema,
    query: z.strictObject({
      ...listQuery,
      status: csv(statusList).optional().describe('Comma-separated statuses.'),
      to_number: phoneNumber.optional(), from_number: phoneNumber.optional(),
      created_gte: dateOrTimestamp('start').optional(), created_lte: dateOrTimestamp('end').optional(),
    }),
    list: ({ em, query }, page) => listCalls(em(), {
      status: query.status, toNumber: query.to_number, fromNumber: query.from_number, createdGte: query.created_gte, createdLte: query.created_lte,
    }, page),
  }),
  getRoute({
    path: '/v3/communications/calls/{call_id}', operationId: 'getCall', tag: 'Communications',
    summary: 'A call: status, legs, duration, cost and quality', permission: 'communications:read', readOnly: true, params: callParams, response: callSchema,
    get: ({ em, params }) => getCall(em(), params.call_id),
  }),
  route({
    method: 'post', path: '/v3/communications/calls/{call_id}/hangup', operationId: 'hangupCall', tag: 'Communications',
    summary: 'Hang up an active call (409 once it has ended)', permission: 'communications:write', status: 200, temporal: true,
    temporalWaitMs: () => 10_000,
    params: callParams, body: z.strictObject({ reason: z.string().max(500).optional() }).optional().default({}), response: callSchema,
    async handler({ deps, em, params, body }) {
      return { body: await hangupCall(context(deps, em()), params.call_id, body.reason ?? null) };
    },
  }),
  route({
    method: 'get', path: '/v3/communications/calls/{call_id}/recording', operationId: 'getCallRecording', tag: 'Communications',
    summary: 'Download a recorded call\'s recording (audio/wav); 404 until it is ready', permission: 'communications:read', status: 200,
    params: callParams, response: z.string(), binary: { mediaType: 'audio/wav', description: 'The recording, as a WAV file' },
    async handler({ deps, em, auth, params }) {
      const source = await recordingSource(em(), params.call_id);
      const wav = await carrierFor(deps.telephony, auth).fetchRecording(source);
      if (!wav) throw new ApiError({ status: 404, code: 'recording_not_ready', title: 'Not Found', detail: 'The carrier has no recording for this call.', suggestion: 'Check that record_call was true and that the call was answered.' });
      return {
        body: null, raw: wav,
        headers: { 'Content-Disposition': `attachment; filename="${params.call_id}.wav"`, 'Cache-Control': 'private, max-age=3600' },
      };
    },
  }),

  // ---- PBX -----------------------------------------------------------------------------------
  route({
    method: 'post', path: '/v3/communications/pbx', operationId: 'createPbx', tag: 'Communications', summary: 'Create a PBX',
    permission: 'communications:write', status: 201,
    body: z.strictObject({ name: text(200), metadata: metadata.optional() }), response: pbxSchema,
    async handler({ em, auth, body }) {
      const pbx = await createPbx(em(), auth, { name: body.name, metadata: body.metadata ?? {} });
      return { body: pbx, headers: { Location: `/v3/communications/pbx/${pbx.id}` } };
    },
  }),
  getRoute({
    path: '/v3/communications/pbx/{pbx_id}', operationId: 'getPbx', tag: 'Communications', summary: 'Retrieve a PBX',
    permission: 'communications:read', readOnly: true, params: pbxParams, response: pbxSchema,
    get: ({ em, params }) => getPbx(em(), params.pbx_id),
  }),
  route({
    method: 'post', path: '/v3/communications/pbx/{pbx_id}/extensions', operationId: 'createPbxExtension', tag: 'Communications',
    summary: 'Add an extension (3–6 digits, unique in the PBX)', permission: 'communications:write', status: 201,
    params: pbxParams, body: extensionBody, response: pbxExtensionSchema,
    async handler({ em, auth, params, body }) {
      const ext = await createExtension(em(), auth, params.pbx_id, {
        extension: body.extension, userId: body.user_id ?? null, status: body.status,
        forwarding: { enabled: body.forwarding?.enabled ?? false, destination: body.forwarding?.destination ?? null },
        voicemail: { enabled: body.voicemail?.enabled ?? false, greeting: body.voicemail?.greeting ?? null },
      });
      return { body: ext, headers: { Location: `/v3/communications/pbx/${params.pbx_id}/extensions/${ext.id}` } };
    },
  }),
  route({
    method: 'get', path: '/v3/communications/pbx/{pbx_id}/extensions', operationId: 'listPbxExtensions', tag: 'Communications',
    summary: 'The PBX extension listing, in extension order, paginated', permission: 'communications:read', status: 200,
    params: pbxParams,
    query: z.strictObject({
      limit: listQuery.limit, cursor: z.string().max(200).optional().describe('`next_cursor` from the previous page.'), status: extensionStatus.optional(),
    }),
    response: pbxExtensionListSchema,
    async handler({ em, params, query }) {
      let after: string | null = null;
      if (query.cursor) {
        const decoded = Buffer.from(query.cursor, 'base64url').toString('utf8');
        if (!/^ext:[0-9]{3,6}$/.test(decoded)) throw validationFailed([{ path: 'cursor', message: 'not a cursor from this listing; pass next_cursor unchanged' }]);
        after = decoded.slice(4);
      }
      const page = await listExtensions(em(), params.pbx_id, { limit: query.limit, after, status: query.status });
      const next = page.has_more && page.last ? Buffer.from(`ext:${page.last}`).toString('base64url') : null;
      return {
        body: { object: 'pbx_extension_list', pbx_id: params.pbx_id, extensions: page.extensions, total_count: page.total_count, has_more: page.has_more, next_cursor: next },
        headers: next ? { Link: `</v3/communications/pbx/${params.pbx_id}/extensions?limit=${query.limit}&cursor=${next}>; rel="next"` } : undefined,
      };
    },
  }),
  getRoute({
    path: '/v3/communications/pbx/{pbx_id}/extensions/{extension_id}', operationId: 'getPbxExtension', tag: 'Communications',
    summary: 'Retrieve an extension', permission: 'communications:read', readOnly: true, params: extensionParams, response: pbxExtensionSchema,
    get: ({ em, params }) => getExtension(em(), params.pbx_id, params.extension_id),
  }),
  route({
    method: 'patch', path: '/v3/communications/pbx/{pbx_id}/extensions/{extension_id}', operationId: 'updatePbxExtension', tag: 'Communications',
    summary: 'Update an extension (number, user, status, forwarding, voicemail)', permission: 'communications:write', status: 200,
    params: extensionParams, body: extensionPatch, response: pbxExtensionSchema,
    async handler({ em, params, body }) {
      return {
        body: await updateExtension(em(), params.pbx_id, params.extension_id, {
          extension: body.extension, userId: body.user_id, status: body.status, forwarding: body.forwarding, voicemail: body.voicemail,
        }),
      };
    },
  }),
  route({
    method: 'delete', path: '/v3/communications/pbx/{pbx_id}/extensions/{extension_id}', operationId: 'deletePbxExtension', tag: 'Communications',
    summary: 'Delete an extension', permission: 'communications:write', status: 200, params: extensionParams,
    response: z.object({ id: z.string(), object: z.literal('pbx_extension'), deleted: z.literal(true) }),
    async handler({ em, params }) {
      await deleteExtension(em(), params.pbx_id, params.extension_id);
      return { body: { id: params.extension_id, object: 'pbx_extension', deleted: true } };
    },
  }),

  // ---- Numbers -------------------------------------------------------------------------------
  route({
    method: 'post', path: '/v3/communications/numbers/provision', operationId: 'provisionNumber', tag: 'Communications',
    summary: 'Rent a phone number (409 with nearby area codes when none is left)', permission: 'communications:write', status: 201,
    body: provisionBody, response: phoneNumberSchema,
    async handler({ deps, em, auth, body, req }) {
      const n = await provisionNumber(em(), carrierFor(deps.telephony, auth), auth, {
        numberType: body.number_type, areaCode: body.area_code ?? null, country: body.country ?? null, features: body.features,
        metadata: body.metadata ?? {}, requestIdempotencyKey: requestKey(req),
      });
      return { body: n, headers: { Location: `/v3/communications/numbers/${n.id}` } };
    },
  }),
  route({
    method: 'get', path: '/v3/communications/numbers/available', operationId: 'searchAvailableNumbers', tag: 'Communications',
    summary: 'Search the numbers that can be provisioned', permission: 'communications:read', status: 200,
    query: z.strictObject({
      number_type: z.enum(['local', 'toll_free', 'international']).default('local'), area_code: areaCode.optional(), country: country.optional(),
      limit: listQuery.limit,
    }),
    response: availableNumbersSchema,
    async handler({ deps, em, auth, query, req }) {
      if (query.number_type === 'international' && !query.country) throw validationFailed([{ path: 'country', message: 'international searches need a country' }]);
      const numbers = await availableNumbers(em(), carrierFor(deps.telephony, auth), auth.livemode, {
        numberType: query.number_type, areaCode: query.area_code ?? null, country: query.country ?? null, limit: query.limit,
      });
      const { parseE164 } = await import('../../../domain/communications/phone.ts');
      return {
        body: {
          object: 'list', has_more: false, next_cursor: null, url: req.path,
          data: numbers.map((n) => ({
            object: 'available_phone_number', number: n, number_type: query.number_type, country: (parseE164(n) as { country: string }).country,
            area_code: query.number_type === 'local' ? n.slice(2, 5) : null, monthly_cost: MONTHLY_COST[query.number_type], currency: 'USD',
          })),
        },
      };
    },
  }),
  listRoute({
    path: '/v3/communications/numbers', operationId: 'listNumbers', tag: 'Communications', summary: 'List the account\'s numbers',
    permission: 'communications:read', item: phoneNumberSchema,
    query: z.strictObject({ ...listQuery, status: z.enum(['active', 'released']).optional(), number_type: z.enum(['local', 'toll_free', 'international']).optional() }),
    list: ({ em, query }, page) => listNumbers(em(), { status: query.status, numberType: query.number_type }, page),
  }),
  getRoute({
    path: '/v3/communications/numbers/{number_id}', operationId: 'getNumber', tag: 'Communications', summary: 'Retrieve a number',
    permission: 'communications:read', readOnly: true, params: numberParams, response: phoneNumberSchema,
    get: ({ deps, auth, params }) => readNumber(deps.orm, auth, params.number_id),
  }),
  route({
    method: 'delete', path: '/v3/communications/numbers/{number_id}', operationId: 'releaseNumber', tag: 'Communications',
    summary: 'Release a number back to the carrier', permission: 'communications:write', status: 200, params: numberParams, response: phoneNumberSchema,
    responses: { 409: { description: 'Already released (invalid_state_transition)' } },
    async handler({ deps, em, auth, params }) {
      return { body: await releaseNumber(em(), () => carrierFor(deps.telephony, auth), params.number_id) };
    },
  }),
  route({
    method: 'put', path: '/v3/communications/address', operationId: 'putRegulatoryAddress', tag: 'Communications',
    summary: 'Put the account\'s regulatory address (international numbers need one)', permission: 'communications:write', status: 200,
    body: z.strictObject({ name: text(200), line1: text(200), city: text(100), postal_code: text(20), country }), response: addressSchema,
    async handler({ em, auth, body }) {
      return { body: await putAddress(em(), auth, { name: body.name, line1: body.line1, city: body.city, postalCode: body.postal_code, country: body.country }) };
    },
  }),

  route({
    method: 'get', path: '/v3/communications/rates', operationId: 'getCallRates', tag: 'Communications',
    summary: 'The account\'s per-minute call rates by destination country (its own over the defaults)', permission: 'communications:read', status: 200,
    response: callRatesSchema,
    async handler({ em }) {
      return { body: await rateTable(em()) };
    },
  }),

  // ---- Analytics -----------------------------------------------------------------------------
  route({
    method: 'get', path: '/v3/communications/analytics/calls', operationId: 'getCallAnalytics', tag: 'Communications',
    summary: 'Call analytics for a day, week, month or custom range in a time zone', permission: 'communications:read', status: 200,
    query: analyticsQuery, response: callAnalyticsSchema,
    async handler({ em, auth, query }) {
      return { body: await callAnalytics(em(), auth, { period: query.period, start: query.start ?? null, end: query.end ?? null, timeZone: query.time_zone }) };
    },
  }),

  // ---- Messaging apps ------------------------------------------------------------------------
  route({
    method: 'post', path: '/v3/communications/{messaging_app}/send', operationId: 'sendMessage', tag: 'Communications',
    summary: 'Send a message through whatsapp, sms or messenger (free text on whatsapp/messenger only within 24 h of the recipient\'s last message)',
    permission: 'communications:write', status: 201, temporal: true, params: appParams, body: sendBody, response: messageSchema,
    async handler({ deps, em, auth, params, body, req, requestId, resourceId }) {
      const app = messagingApp(params.messaging_app);
      const message = await sendMessage(context(deps, em()), auth, {
        messageId: await resourceId('commsMessage'), app, to: checkRecipient(app, body.to), from: body.from, text: body.text ?? null,
        template: body.template ? { name: body.template.name, language: body.template.language, variables: body.template.variables } : null,
        mediaUrl: body.media_url ?? null, testClock: body.test_clock ?? null, requestIdempotencyKey: requestKey(req), requestId,
      });
      return { body: message, headers: { Location: `/v3/communications/messages/${message.id}` } };
    },
  }),
  route({
    method: 'post', path: '/v3/communications/{messaging_app}/inbound', operationId: 'receiveInboundMessage', tag: 'Communications',
    summary: 'Receive a recipient\'s message (signed with the number\'s inbound_secret, Standard Webhooks); opens the 24-hour service window',
    permission: 'communications:write', status: 201, params: appParams, body: inboundBody, response: inboundMessageSchema,
    responses: { 401: { description: 'Missing or wrong signature (signature_invalid)' } },
    async handler({ em, auth, params, body, req, rawBody }) {
      const app = messagingApp(params.messaging_app);
      return {
        body: await receiveInbound(em(), auth, {
          app, from: checkRecipient(app, body.from), to: body.to, text: body.text ?? null,
          headers: {
            'webhook-id': req.header('webhook-id'), 'webhook-timestamp': req.header('webhook-timestamp'), 'webhook-signature': req.header('webhook-signature'),
          },
          signedBody: rawBody.toString('utf8'), now: await requestNow(em(), auth, body.test_clock ?? null),
        }),
      };
    },
  }),
  getRoute({
    path: '/v3/communications/messages/{message_id}', operationId: 'getMessage', tag: 'Communications', summary: 'Retrieve a sent message and its status',
    permission: 'communications:read', readOnly: true, params: z.strictObject({ message_id: id }), response: messageSchema,
    get: ({ deps, auth, params }) => readMessage(deps.orm, auth, params.message_id),
  }),
];
