import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql/index.js';
import { builder } from './builder.ts';
// Each module adds its types, root fields and relations to the builder.
import './types/customers.ts';
import './types/billing.ts';
import './types/commerce.ts';
import './types/shipping.ts';
import './types/payments.ts';
import './types/webhooks.ts';
import './types/operations.ts';
import './types/rewards.ts';
import './types/warehouses.ts';

/** The schema, built once per process from the type modules. */
export const graphqlSchema: GraphQLSchema = builder.toSchema({ sortSchema: true });

/** The schema as SDL: served at /v3/graphql/schema.graphql and checked in as api/v3/graphql/schema.graphql. */
export const schemaSdl = `${printSchema(lexicographicSortSchema(graphqlSchema))}\n`;
