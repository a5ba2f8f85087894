import { z } from 'zod';
import type { GraphQLContext } from '../../../domain/graphql/context.ts';
import { Loaders } from '../../../domain/graphql/loaders.ts';
import { ApiError, validationFailed } from '../../../platform/errors.ts';
import { realtimeHubOf } from '../../../domain/warehouses/public.ts';
import type { AppDeps } from '../../http/deps.ts';
import type { HandlerContext, HandlerResult } from '../../http/route.ts';
import { state } from '../../http/context.ts';
import { prefersMediaType } from '../../http/negotiate.ts';
import { route, withTemporalDeadline } from '../../http/route.ts';
import type { ServerContext, createGraphqlServer } from './yoga.ts';

const MAX_DOCUMENT = 20_000;
const EVENT_STREAM = 'text/event-stream';

const requestBody = z.strictObject({
  query: z.string().min(1).max(MAX_DOCUMENT).describe('The GraphQL document.'),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().max(200).nullable().optional(),
  extensions: z.record(z.string(), z.unknown()).nullable().optional(),
});

const requestQuery = z.strictObject({
  query: z.string().min(1).max(MAX_DOCUMENT).describe('The GraphQL document (a query; mutations need POST).'),
  variables: z.string().max(MAX_DOCUMENT).optional().describe('The variables as a JSON object.'),
  operationName: z.string().max(200).optional(),
});

const graphqlError = z.object({
  message: z.string(),
  locations: z.array(z.object({ line: z.number(), column: z.number() })).optional(),
  path: z.array(z.union([z.string(), z.number()])).optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

export const graphqlResponseSchema = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z.array(graphqlError).optional(),
}).meta({ id: 'GraphQLResponse' });

/**
 * One yoga per API process (the schema is built once), on the first GraphQL request: graphql, yoga
 * and the schema are several hundred modules that the workers, the CLI and a REST-only API do not use.
 */
const servers = new WeakMap<object, Promise<ReturnType<typeof createGraphqlServer>>>();

/**
 * Runs a GraphQL request that the REST pipeline has admitted (key, limits, permission graphql:read,
 * Idempotency-Key): the resolvers get the request's account-and-mode EntityManager and fresh loaders.
 */
async function execute(ctx: HandlerContext<unknown, unknown, unknown>, payload: Record<string, unknown>): Promise<HandlerResult> {
  const { deps, auth } = ctx;
  let server = servers.get(deps);
  if (!server) {
    servers.set(deps, (server = import('./yoga.ts').then((yoga) => yoga.createGraphqlServer(deps.logger))));
    server.catch(() => servers.delete(deps));
  }
  const yoga = await server;
  const stream = prefersMediaType(ctx.req.headers.accept, ['application/json', EVENT_STREAM]) === EVENT_STREAM;
  const context: GraphQLContext & ServerContext = {
    caller: { accountId: auth.accountId, livemode: auth.livemode, keyId: auth.keyId, keyType: auth.keyType, permissions: auth.permissions },
    em: ctx.em(), requestId: ctx.requestId, loaders: new Loaders(), idempotencyKey: ctx.idempotencyKey,
    resourceId: ctx.resourceId, withTemporal: (run) => withTemporalDeadline(deps, run),
    services: { temporal: deps.temporal, paymentGateways: deps.paymentGateways, billingCyclesPerRun: deps.config.BILLING_CYCLES_PER_RUN },
    introspection: !auth.livemode || liveIntrospection(deps),
    stockFeed: realtimeHubOf(deps), run: { started: false },
  };
  const response = await yoga.fetch('http://graphql.internal/v3/graphql', {
    method: 'POST', headers: { 'content-type': 'application/json', accept: stream ? EVENT_STREAM : 'application/json' }, body: JSON.stringify(payload),
  }, context);
  if (stream && context.run.started && response.headers.get('content-type')?.startsWith(EVENT_STREAM)) {
    await streamEvents(ctx, response);
    return { body: null };
  }
  const body = (stream ? resultOfEvents(await response.text()) : await response.json()) as z.infer<typeof graphqlResponseSchema>;
  if (body.data === undefined) throw notRun(body.errors ?? []);
  // Once execution started: 200 with `errors` beside `data` for the fields that failed.
  return { status: 200, body };
}

/**
 * Sends yoga's server-sent events (`event: next` with each result, `event: complete` at the end,
 * comments as keep-alives) to the client as they come. The stream may last long (a subscription),
 * so the key's concurrency slot is given back once it has started, as the WebSocket feed does;
 * when the client goes away, the stream is canceled, which ends the subscription. (A request with
 * an Idempotency-Key is one mutation: its stream ends by itself and is stored whole, as /v3/ai's.)
 */
async function streamEvents(ctx: HandlerContext<unknown, unknown, unknown>, response: Response): Promise<void> {
  const { res } = ctx;
  res.status(200);
  res.setHeader('Content-Type', `${EVENT_STREAM}; charset=utf-8`);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const st = state(res);
  // A mutation with an Idempotency-Key (one result, then complete): the stream is stored for a retry.
  const store = st.beforeSend;
  st.beforeSend = undefined;
  const chunks: Buffer[] | null = store ? [] : null;
  if (!store) await st.release?.();
  const reader = response.body!.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  res.once('close', cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks?.push(Buffer.from(value));
      if (res.destroyed || res.writableEnded) break;
      res.write(value);
    }
  } finally {
    res.off('close', cancel);
    await store?.(200, { 'Content-Type': `${EVENT_STREAM}; charset=utf-8` }, Buffer.concat(chunks ?? []));
    await st.release?.();
    if (!res.destroyed && !res.writableEnded) res.end();
  }
}

/** The GraphQL result in the events of a document that did not run (one `next` event). */
function resultOfEvents(text: string): unknown {
  const data = /^event: next\ndata: (.*)$/m.exec(text)?.[1];
  try {
    return data ? JSON.parse(data) : { errors: [] };
  } catch {
    return { errors: [] };
  }
}

/**
 * A document that did not run (syntax, validation, a limit, introspection in live mode): a 400
 * problem document, as for any bad REST input, with a stable code (the first error's) and the
 * GraphQL errors (messages and locations) in `graphql_errors`.
 */
function notRun(errors: z.infer<typeof graphqlError>[]): ApiError {
  const first = errors[0];
  const code = String(first?.extensions?.code ?? 'graphql_invalid_document').toLowerCase();
  const suggestion = typeof first?.extensions?.suggestion === 'string'
    ? first.extensions.suggestion
    : 'Fix the document at the locations in graphql_errors (check it against GET /v3/graphql/schema.graphql) and send it again.';
  return new ApiError({
    status: 400, code, title: 'Bad Request',
    detail: errors.map((e) => e.message).join(' ') || 'The GraphQL document could not be run.',
    suggestion,
    extensions: { graphql_errors: errors.map(({ message, locations }) => ({ message, ...(locations ? { locations } : {}) })) },
  });
}

const graphqlResponses = {
  400: { description: 'The document did not run: syntax or validation errors, a depth/cost/alias limit (query_too_deep, query_too_costly, too_many_aliases), introspection in live mode, or an Idempotency-Key on more than one mutation (idempotency_key_needs_one_mutation); the GraphQL errors are in graphql_errors' },
};

const eventStream = {
  mediaType: EVENT_STREAM,
  description: 'server-sent events with Accept: text/event-stream (GraphQL over SSE, distinct connections): `next` with each result (a subscription\'s changes as they commit), then `complete`',
};

export const graphqlRoutes = [
  route({
    method: 'post', path: '/v3/graphql', operationId: 'graphql', tag: 'GraphQL',
    summary: 'Run a GraphQL query or mutation, or a subscription over server-sent events (field permissions as REST; Idempotency-Key for one mutation)',
    permission: 'graphql:read', status: 200, body: requestBody, response: graphqlResponseSchema, responses: graphqlResponses, stream: eventStream,
    handler: (ctx) => execute(ctx, ctx.body),
  }),
  route({
    method: 'get', path: '/v3/graphql', operationId: 'graphqlGet', tag: 'GraphQL',
    summary: 'Run a GraphQL query given in the URL (queries only)',
    permission: 'graphql:read', status: 200, query: requestQuery, response: graphqlResponseSchema, responses: graphqlResponses, stream: eventStream,
    handler: (ctx) => {
      let variables: unknown;
      try {
        variables = ctx.query.variables === undefined ? undefined : JSON.parse(ctx.query.variables);
      } catch {
        variables = null;
      }
      if (variables !== undefined && (variables === null || typeof variables !== 'object' || Array.isArray(variables))) {
        throw validationFailed([{ path: 'variables', message: 'expected a JSON object, e.g. {"id":"cus_…"}' }]);
      }
      if (/^\s*mutation\b/.test(ctx.query.query)) {
        throw validationFailed([{ path: 'query', message: 'a mutation needs POST /v3/graphql (GET runs queries only)' }]);
      }
      return execute(ctx, { query: ctx.query.query, variables, operationName: ctx.query.operationName });
    },
  }),
  route({
    method: 'get', path: '/v3/graphql/schema.graphql', operationId: 'graphqlSchema', tag: 'GraphQL',
    summary: 'The GraphQL schema as SDL (the file checked in as api/v3/graphql/schema.graphql)',
    permission: 'graphql:read', status: 200, response: z.string(),
    binary: { mediaType: ['text/plain', 'application/graphql'], description: 'The schema in GraphQL SDL' },
    handler: async () => ({ body: null, raw: Buffer.from((await import('../../../domain/graphql/schema.ts')).schemaSdl), headers: { 'Content-Type': 'text/plain; charset=utf-8' } }),
  }),
];

function liveIntrospection(deps: AppDeps): boolean {
  return (deps.config as unknown as Record<string, boolean>).GRAPHQL_LIVE_INTROSPECTION === true;
}
