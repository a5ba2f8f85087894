import SchemaBuilder from '@pothos/core';
import RelayPlugin from '@pothos/plugin-relay';
import { GraphQLError, Kind, type ValueNode } from 'graphql/index.js';
import type { GraphQLContext } from './context.ts';

/*
 * `graphql/index.js`, not `graphql`: graphql@16 ships an ESM build beside its CommonJS one, and a
 * bundler (vitest) picks the ESM one for our files while Node loads the CommonJS one for Pothos,
 * yoga and graphql-armor; two copies of graphql cannot share a schema. Naming the file makes every
 * importer load the same copy.
 */

/**
 * The code-first schema builder (Pothos) every type module adds to. Field names are the REST
 * names (snake_case), so a GraphQL object is the REST resource's JSON with relations added.
 */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  Scalars: {
    JSON: { Input: unknown; Output: unknown };
    SafeInt: { Input: number; Output: number };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [RelayPlugin],
  defaultFieldNullability: false,
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // Records keep their REST ids (cus_…, ord_…); there is no global `node` lookup.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
});

builder.scalarType('JSON', {
  description: 'A JSON value, as in the REST resource (addresses, metadata, line items, custom fields).',
  serialize: (value) => value,
  parseValue: (value) => value,
});

const isSafeInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

builder.scalarType('SafeInt', {
  description: 'An integer up to ±(2^53 − 1) (amounts in minor units exceed GraphQL\'s 32-bit Int).',
  serialize: (value) => {
    if (!isSafeInt(value)) throw new GraphQLError('SafeInt cannot represent a value that is not a safe integer');
    return value;
  },
  parseValue: (value) => {
    if (!isSafeInt(value)) throw new GraphQLError('expected an integer between -(2^53 - 1) and 2^53 - 1');
    return value;
  },
  parseLiteral: (node: ValueNode) => {
    const n = node.kind === Kind.INT ? Number(node.value) : NaN;
    if (!isSafeInt(n)) throw new GraphQLError('expected an integer between -(2^53 - 1) and 2^53 - 1');
    return n;
  },
});

builder.queryType({ description: 'Reads over every area, with the relations REST needs several requests for.' });
builder.mutationType({ description: 'The main writes, validated by the same schemas as REST. One mutation per request when it carries an Idempotency-Key.' });
builder.subscriptionType({ name: 'SubscriptionRoot', description: 'Changes as they commit, over server-sent events (POST /v3/graphql with Accept: text/event-stream).' });
