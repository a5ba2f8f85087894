import { GRAPHIQL_PATH, mountGraphiql } from '../../api/v3/graphql/graphiql.ts';
import { graphqlRoutes } from '../../api/v3/graphql/routes.ts';
import { defineArea } from '../../platform/area.ts';

/**
 * /v3/graphql: one GraphQL schema over the other areas' public services (customers with their
 * subscriptions, invoices, orders, shipments, payments …), behind the same admission, permissions,
 * rate limits and idempotency as REST, and GraphiQL at /graphiql. No tables of its own. See docs/graphql.md.
 */
export const graphqlArea = defineArea({
  name: 'graphql',
  permissions: ['graphql'],
  routes: graphqlRoutes,
  pages: { prefixes: [GRAPHIQL_PATH], mount: mountGraphiql },
});
