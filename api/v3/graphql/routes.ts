import { z } from 'zod';
import type { GraphQLContext } from '../../../domain/graphql/context.ts';
import { Loaders } from '../../../domain/graphql/loaders.ts';
import { schemaSdl } from '../../../domain/graphql/schema.ts';
import { validationFailed } from '../../../platform/errors.ts';
import type { AppDeps } from '../../http/deps.ts';
import type { HandlerContext, HandlerResult } from '../../http/route.ts';
import { route } from '../../http/route.ts';
import { createGraphqlServer, type ServerContext } from './yoga.ts';

const MAX_DOCUMENT = 20_000;

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

/** One yoga per API process (the schema is built once). */
const servers = new WeakMap<object, ReturnType<typeof createGraphqlServer>>();

/**
 * Runs a GraphQL request that the REST pipeline has admitted (key, limits, permission graphql:read,
 * Idempotency-Key): the resolvers get the request's account-and-mode EntityManager and fresh loaders.
 */
async function execute(ctx: HandlerContext<unknown, unknown, unknown>, payload: Record<string, unknown>): Promise<HandlerResult> {
  const { deps, auth } = ctx;
  let yoga = servers.get(deps);
  if (!yoga) servers.set(deps, (yoga = createGraphqlServer(deps.logger)));
  const context: GraphQLContext & ServerContext = {
    caller: { accountId: auth.accountId, livemode: auth.livemode, keyId: auth.keyId, keyType: auth.keyType, permissions: auth.permissions },
    em: ctx.em(), requestId: ctx.requestId, loaders: new Loaders(), idempotencyKey: ctx.idempotencyKey,
    introspection: !auth.livemode || liveIntrospection(deps),
  };
  const response = await yoga.fetch('http://graphql.internal/v3/graphql', {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(payload),
  }, context);
  const body = (await response.json()) as z.infer<typeof graphqlResponseSchema>;
  // A document that did not run (syntax, validation, a limit, introspection in live mode): 400, as
  // GraphQL over HTTP answers it; once execution started, 200 with `errors` beside `data`.
  return { status: body.data === undefined ? 400 : 200, body };
}

const graphqlResponses = {
  400: { description: 'The document did not run: syntax or validation errors, a depth/cost/alias limit, introspection in live mode, or an Idempotency-Key on more than one mutation (GraphQL errors with extensions.code)', schema: graphqlResponseSchema },
};

export const graphqlRoutes = [
  route({
    method: 'post', path: '/v3/graphql', operationId: 'graphql', tag: 'GraphQL',
    summary: 'Run a GraphQL query or mutation (field permissions as REST; Idempotency-Key for one mutation)',
    permission: 'graphql:read', status: 200, body: requestBody, response: graphqlResponseSchema, responses: graphqlResponses,
    handler: (ctx) => execute(ctx, ctx.body),
  }),
  route({
    method: 'get', path: '/v3/graphql', operationId: 'graphqlGet', tag: 'GraphQL',
    summary: 'Run a GraphQL query given in the URL (queries only)',
    permission: 'graphql:read', status: 200, query: requestQuery, response: graphqlResponseSchema, responses: graphqlResponses,
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
    handler: async () => ({ body: null, raw: Buffer.from(schemaSdl), headers: { 'Content-Type': 'text/plain; charset=utf-8' } }),
  }),
];

function liveIntrospection(deps: AppDeps): boolean {
  return (deps.config as unknown as Record<string, boolean>).GRAPHQL_LIVE_INTROSPECTION === true;
}
