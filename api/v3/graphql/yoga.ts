import { costLimitPlugin } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { GraphQLError, Kind, NoSchemaIntrospectionCustomRule, type ValidationContext, type ValidationRule } from 'graphql/index.js';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { GraphQLContext } from '../../../domain/graphql/context.ts';
import { graphqlSchema } from '../../../domain/graphql/schema.ts';
import { ApiError } from '../../../platform/errors.ts';
import type { Logger } from '../../../platform/logger.ts';

/** What the route hands GraphQL besides the resolvers' context: whether this caller may introspect. */
export interface ServerContext extends GraphQLContext {
  introspection: boolean;
  /** Set once the document passed parsing and validation and runs (the object is shared with the route). */
  run: { started: boolean };
}

/**
 * Limits, checked while the document is validated (before anything runs): the deepest field
 * nesting, the cost (graphql-armor: 2 per object field, 1 per scalar, ×1.5 per level, × a literal
 * `first`), and aliases. The numbers are documented in docs/graphql.md.
 */
export const LIMITS = { depth: 10, cost: 30_000, aliases: 20 } as const;

/** A limit's refusal as a validation error with a code a client can branch on. */
function limitError(code: string) {
  return (ctx: ValidationContext | unknown, err: GraphQLError) => {
    (ctx as ValidationContext).reportError(new GraphQLError(err.message.replace(/^Syntax Error: /, ''), {
      extensions: { code, status: 400, suggestion: 'Ask for fewer nested lists or smaller pages (first), or split the query into several requests.' },
    }));
  };
}

/**
 * With an Idempotency-Key the document must be one mutation with one root field, so the stored
 * answer stands for exactly one write (a retry replays it). Without a key anything goes.
 */
const oneMutationPerKey: ValidationRule = (ctx) => ({
  Document(doc) {
    const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    const op = ops[0];
    if (ops.length === 1 && op?.operation === 'mutation' && op.selectionSet.selections.length === 1) return;
    ctx.reportError(new GraphQLError('A request with an Idempotency-Key must hold exactly one mutation with one root field.', {
      extensions: {
        code: 'idempotency_key_needs_one_mutation', status: 400,
        suggestion: 'Send each mutation in its own request with its own Idempotency-Key, or send queries without the header.',
      },
    }));
  },
});

const requestRules: Plugin<ServerContext> = {
  onValidate({ addValidationRule, context }) {
    if (!context.introspection) addValidationRule(NoSchemaIntrospectionCustomRule);
    if (context.idempotencyKey !== null) addValidationRule(oneMutationPerKey);
  },
  // What tells the route a stream of events from a document that never ran (answered as a 400 problem).
  onExecute({ args }) {
    args.contextValue.run.started = true;
  },
  onSubscribe({ args }) {
    args.contextValue.run.started = true;
  },
};

/** A domain error (ApiError: not found, validation failed, conflict …) keeps its code, status, suggestion and field errors. */
function maskError(logger: Logger) {
  return (error: unknown): Error => {
    const original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
    if (original instanceof ApiError) {
      return new GraphQLError(original.detail, {
        nodes: error instanceof GraphQLError ? error.nodes : undefined,
        path: error instanceof GraphQLError ? error.path : undefined,
        extensions: {
          code: original.code, status: original.status, suggestion: original.suggestion,
          ...(original.errors ? { errors: original.errors } : {}), ...original.extensions,
        },
      });
    }
    if (original instanceof GraphQLError) return error instanceof GraphQLError ? error : original;
    logger.error('graphql resolver failed', { error: (original as Error)?.name ?? 'unknown', message: (original as Error)?.message });
    return new GraphQLError('An unexpected error occurred while resolving this field.', {
      path: error instanceof GraphQLError ? error.path : undefined,
      extensions: { code: 'internal_error', status: 500, suggestion: 'Retry the request; if it persists, contact support with the Request-Id.' },
    });
  };
}

/**
 * The GraphQL executor behind /v3/graphql: graphql-yoga over the Pothos schema, without its own
 * HTTP surface (the route calls `fetch` after the REST pipeline admitted the request) and without
 * GraphiQL or a landing page.
 */
export function createGraphqlServer(logger: Logger): YogaServerInstance<ServerContext, ServerContext> {
  return createYoga<ServerContext>({
    schema: graphqlSchema,
    graphqlEndpoint: '/v3/graphql',
    graphiql: false,
    landingPage: false,
    logging: false,
    maskedErrors: { maskError: maskError(logger) },
    plugins: [
      maxDepthPlugin({ n: LIMITS.depth, ignoreIntrospection: true, propagateOnRejection: false, onReject: [limitError('query_too_deep')] }),
      costLimitPlugin({ maxCost: LIMITS.cost, propagateOnRejection: false, onReject: [limitError('query_too_costly')] }),
      maxAliasesPlugin({ n: LIMITS.aliases, propagateOnRejection: false, onReject: [limitError('too_many_aliases')] }),
      requestRules,
    ],
  });
}
