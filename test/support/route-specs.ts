import { z } from 'zod';
import { route, type RouteSpec } from '../../api/http/route.ts';
import { buildOpenApi } from '../../api/openapi.ts';

/** A route whose handler is never called: only its contract matters (OpenAPI generation tests). */
export function spec(over: Partial<RouteSpec<any, any, any>>): RouteSpec<any, any, any> {
  return route<any, any, any>({
    method: 'get', path: '/v3/things', operationId: 'op', summary: 's', tag: 'T', permission: 'crm:read',
    status: 200, response: z.object({ id: z.string() }),
    handler: () => Promise.reject(new Error('not called')),
    ...over,
  });
}

export type Doc = {
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, any> };
};

/** The OpenAPI document of just these routes. */
export const build = (routes: RouteSpec<any, any, any>[]) => buildOpenApi(routes, [], '0.0.0') as unknown as Doc;
