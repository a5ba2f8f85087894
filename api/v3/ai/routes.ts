import type { Response } from 'express';
import { z } from 'zod';
import { requireModel } from '../../../domain/ai/provider.ts';
import {
  aiAnswerSchema, aiUsageSchema, askBodySchema, customerSummarySchema, replyDraftBodySchema, replyDraftSchema,
} from '../../../domain/ai/schemas.ts';
import type { AiContext, AskEvent } from '../../../domain/ai/service.ts';
import { keyUsage } from '../../../domain/ai/usage.ts';
import { ALL_PERMISSIONS } from '../../../domain/permissions.ts';
import { ApiError } from '../../../platform/errors.ts';
import { requirePermission } from '../../http/admission.ts';
import { state, type AuthContext } from '../../http/context.ts';
import type { AppDeps } from '../../http/deps.ts';
import { prefersMediaType } from '../../http/negotiate.ts';
import { problemDocument, toApiError } from '../../http/problems.ts';
import { route, type HandlerContext } from '../../http/route.ts';

const EVENT_STREAM = 'text/event-stream';

/**
 * The service, and the AI SDK under it, load on the first call that has a model to call: a server
 * without a configured model (and every other area's hot path) never holds them (about 5 MB of heap).
 */
const aiService = () => import('../../../domain/ai/service.ts');
const customerParams = z.strictObject({ customer_id: z.string().max(64) });

const replyBody = replyDraftBodySchema.superRefine((b, ctx) => {
  if (b.interaction_id !== undefined && (b.customer_id !== undefined || b.message !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['interaction_id'], message: 'send either interaction_id, or customer_id with message, not both' });
  } else if (b.interaction_id === undefined) {
    if (b.customer_id === undefined) ctx.addIssue({ code: 'custom', path: ['customer_id'], message: 'required with message (or send interaction_id instead)' });
    if (b.message === undefined) ctx.addIssue({ code: 'custom', path: ['message'], message: 'required with customer_id: the customer\'s message to answer (or send interaction_id instead)' });
  }
});

function aiContext(deps: AppDeps, auth: AuthContext, em: () => ReturnType<HandlerContext<unknown, unknown, unknown>['em']>): AiContext {
  return {
    em: em(), caller: { accountId: auth.accountId, livemode: auth.livemode, keyId: auth.keyId },
    permissions: auth.keyType === 'restricted' ? auth.permissions : [ALL_PERMISSIONS],
    model: deps.aiModel, config: deps.config, logger: deps.logger,
  };
}

/** Aborted when the client goes away, so a streaming model call stops spending tokens. */
function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => { if (!res.writableFinished) controller.abort(); });
  return controller.signal;
}

/**
 * Answers `ask` as server-sent events: the headers go out with the first event (so a refusal
 * before it — not configured, over budget — is still a problem document), then one event per
 * tool call, tool result and text delta, and `done` with the whole answer (or `error` with a
 * problem document). With an Idempotency-Key the whole stream is stored, and a retry replays it.
 */
async function streamAsk(ctx: HandlerContext<z.output<typeof askBodySchema>, undefined, undefined>, ai: AiContext): Promise<void> {
  const { req, res } = ctx;
  const st = state(res);
  const chunks: Buffer[] = [];
  const headers = { 'Content-Type': `${EVENT_STREAM}; charset=utf-8`, 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' };
  const write = (event: string, data: unknown) => {
    if (!res.headersSent) {
      res.status(200);
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      res.flushHeaders();
    }
    const chunk = Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    chunks.push(chunk);
    // A client that went away gets nothing more (writing to a destroyed response would fail).
    if (!res.destroyed && !res.writableEnded) res.write(chunk);
  };
  let status = 200;
  try {
    const { askStream } = await aiService();
    await askStream(ai, ctx.body.question, (e: AskEvent) => write(e.event, e.data), clientGone(res));
  } catch (err) {
    if (!res.headersSent) throw err; // nothing sent yet: the usual problem document
    const problem = toApiError(err);
    if (problem.status >= 500 && !(err instanceof ApiError)) ctx.deps.logger.error('ai stream failed', { error: (err as Error).name });
    status = problem.status;
    write('error', problemDocument(req, res, problem));
  }
  // The stream is the response: store it for a retry with the same key (a failure frees the key).
  const store = st.beforeSend;
  st.beforeSend = undefined;
  await store?.(status, headers, Buffer.concat(chunks));
  await st.release?.();
  if (!res.destroyed) res.end();
}

export const aiRoutes = [
  route({
    method: 'post', path: '/v3/ai/ask', operationId: 'askAi', tag: 'AI',
    summary: 'Ask a question about the account\'s data; answered through read-only tools, with the records cited (JSON, or server-sent events)',
    permission: 'ai:write', status: 200, body: askBodySchema, response: aiAnswerSchema,
    stream: { mediaType: EVENT_STREAM, description: 'server-sent events with Accept: text/event-stream: tool_call, tool_result, text, then done (the AiAnswer) or error (a problem)' },
    responses: {
      429: { description: 'The key\'s monthly token budget is used up (ai_budget_exceeded)' },
      502: { description: 'The model\'s output was invalid (ai_invalid_output)' },
      503: { description: 'No provider configured (ai_not_configured), or the provider failed (ai_provider_unavailable)' },
    },
    async handler(ctx) {
      const ai = aiContext(ctx.deps, ctx.auth, ctx.em);
      if (prefersMediaType(ctx.req.headers.accept, ['application/json', EVENT_STREAM]) === EVENT_STREAM) {
        requireModel(ai.model);
        await streamAsk(ctx, ai);
        return { body: null };
      }
      const { ask } = await aiService();
      return { body: await ask(ai, ctx.body.question, clientGone(ctx.res)) };
    },
  }),
  route({
    method: 'post', path: '/v3/ai/customers/{customer_id}/summary', operationId: 'summarizeCustomer', tag: 'AI',
    summary: 'A structured summary of one customer (needs crm:read too; orders and billing are included when the key may read them)',
    permission: 'ai:write', status: 200, params: customerParams, body: z.strictObject({}).optional().default({}), response: customerSummarySchema,
    responses: {
      429: { description: 'The key\'s monthly token budget is used up (ai_budget_exceeded)' },
      502: { description: 'The model\'s output was invalid (ai_invalid_output)' },
      503: { description: 'No provider configured (ai_not_configured), or the provider failed (ai_provider_unavailable)' },
    },
    async handler({ deps, auth, em, params }) {
      requirePermission(auth, 'crm:read');
      const { customerSummary } = await aiService();
      return { body: await customerSummary(aiContext(deps, auth, em), params.customer_id) };
    },
  }),
  route({
    method: 'post', path: '/v3/ai/support/reply-draft', operationId: 'draftSupportReply', tag: 'AI',
    summary: 'Draft a reply to an interaction (or a customer\'s message) from the customer\'s journey and open orders (needs crm:read too)',
    permission: 'ai:write', status: 200, body: replyBody, response: replyDraftSchema,
    responses: {
      404: { description: 'No such interaction or customer in this account and mode' },
      429: { description: 'The key\'s monthly token budget is used up (ai_budget_exceeded)' },
      502: { description: 'The model\'s output was invalid (ai_invalid_output)' },
      503: { description: 'No provider configured (ai_not_configured), or the provider failed (ai_provider_unavailable)' },
    },
    async handler({ deps, auth, em, body }) {
      requirePermission(auth, 'crm:read');
      const { replyDraft } = await aiService();
      return { body: await replyDraft(aiContext(deps, auth, em), { interactionId: body.interaction_id, customerId: body.customer_id, message: body.message }) };
    },
  }),
  route({
    method: 'get', path: '/v3/ai/usage', operationId: 'getAiUsage', tag: 'AI',
    summary: 'This key\'s /v3/ai token usage this month (UTC) and what is left of its budget',
    permission: 'ai:read', status: 200, response: aiUsageSchema,
    async handler({ deps, auth, em }) {
      return { body: await keyUsage(em(), { accountId: auth.accountId, livemode: auth.livemode, keyId: auth.keyId }, deps.config.AI_MONTHLY_TOKEN_BUDGET) };
    },
  }),
];
