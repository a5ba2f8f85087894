import { z } from 'zod';
import { PROBLEM_BASE } from './http/problems.ts';
import type { RouteSpec } from './http/route.ts';

/** A route outside the /v3 pipeline (health, docs), listed so the document covers all the app serves. */
export interface ExtraRoute {
  method: 'get';
  path: string;
  summary: string;
  tag: string;
  security: boolean;
}

const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code', 'request_id', 'suggestion'],
  properties: {
    type: { type: 'string', format: 'uri', description: `${PROBLEM_BASE}<code>` },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    code: { type: 'string' },
    request_id: { type: 'string' },
    suggestion: { type: 'string' },
    errors: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
};

/**
 * Converts a zod schema to JSON Schema. Shared definitions (named schemas, recursive ones such as
 * JSON values) are hoisted into `components` and their `#/$defs/…` references rewritten to point
 * there; a name already taken by a different definition gets a numeric suffix.
 */
type Components = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Components): Record<string, unknown> {
  const { $schema: _drop, $defs = {}, ...root } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  const defs = $defs as Record<string, unknown>;
  const names = new Map<string, string>();
  const rewrite = (value: unknown): any =>
    JSON.parse(JSON.stringify(value).replace(/"#\/\$defs\/([^"]+)"/g, (_m, name: string) => `"#/components/schemas/${names.get(name)}"`));
  for (const name of Object.keys(defs)) {
    const base = name.startsWith('__schema') ? 'JsonValue' : io === 'input' ? `${name}Input` : name;
    names.set(name, base);
  }
  for (const [name, def] of Object.entries(defs)) {
    let target = names.get(name)!;
    for (let i = 2; target in components && JSON.stringify(components[target]) !== JSON.stringify(rewrite(def)); i++) target = `${names.get(name)}${i}`;
    names.set(name, target);
    components[target] = rewrite(def);
  }
  return rewrite(root);
}

function queryParameters(schema: z.ZodType, location: 'query' | 'path', components: Components) {
  const json = jsonSchema(schema, 'input', components) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, prop]) => ({
    name,
    in: location,
    required: location === 'path' || (json.required ?? []).includes(name),
    description: prop.description,
    schema: prop,
  }));
}

const errorResponses = (spec: RouteSpec<any, any, any>) => {
  const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
  const out: Record<string, unknown> = {
    401: { description: 'Missing, malformed, unknown, expired or revoked API key', content: problem },
    403: { description: `The key lacks ${spec.permission}`, content: problem },
    429: { description: 'Rate or concurrency limit reached', content: problem },
  };
  if (spec.body) Object.assign(out, {
    400: { description: 'Malformed JSON', content: problem },
    409: { description: 'Idempotency key in use, or a state conflict', content: problem },
    413: { description: 'Body larger than allowed', content: problem },
    415: { description: 'Body is not application/json', content: problem },
  });
  if (spec.body || spec.query) out[422] = { description: 'Validation failed (every bad field listed)', content: problem };
  if (spec.params) out[404] = { description: 'No such record in this account and mode', content: problem };
  if (spec.temporal) out[503] = { description: 'Temporal unreachable; nothing changed', content: problem };
  return out;
};

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApi(routes: RouteSpec<any, any, any>[], extras: ExtraRoute[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const components: Components = { Problem: problemSchema };
  for (const spec of routes) {
    const parameters = [
      ...(spec.params ? queryParameters(spec.params, 'path', components) : []),
      ...(spec.query ? queryParameters(spec.query, 'query', components) : []),
      ...(spec.body && spec.method !== 'get' ? [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }] : []),
    ];
    (paths[spec.path] ??= {})[spec.method] = {
      operationId: spec.operationId,
      summary: spec.summary,
      tags: [spec.tag],
      'x-permission': spec.permission,
      parameters,
      ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(spec.body, 'input', components) } } } } : {}),
      responses: {
        [spec.status]: {
          description: 'Success',
          content: {
            'application/json': { schema: jsonSchema(spec.response, 'output', components) },
            'application/xml': { schema: { description: 'The same document as XML' } },
          },
        },
        ...errorResponses(spec),
      },
    };
  }
  for (const extra of extras) {
    (paths[extra.path] ??= {})[extra.method] = {
      operationId: extra.path.replace(/\W+/g, '_').replace(/^_|_$/g, ''),
      summary: extra.summary,
      tags: [extra.tag],
      ...(extra.security ? {} : { security: [] }),
      responses: { 200: { description: 'OK' } },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Business Platform API',
      version,
      description: 'Billing, commerce, CRM, ERP, communications, payments, shipping, warehouses, rewards, analytics and webhooks. Errors are RFC 9457 problem documents; lists use cursor pagination; POST/PUT/PATCH accept an Idempotency-Key.',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'bp_live_…, bp_test_… or restricted bp_rk_… keys' } },
      schemas: components,
    },
    paths,
  };
}
