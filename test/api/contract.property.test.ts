import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RouteSpec } from '../../api/http/route.ts';
import { requireNonBlank } from '../../api/openapi.ts';
import { eventCatalog, v3Routes } from '../../domain/registry.ts';
import { MARKETPLACES } from '../../domain/commerce/marketplaces.ts';
import { SUPPORTED_CURRENCIES } from '../../domain/money.ts';
import { ID_PREFIX } from '../../platform/ids.ts';
import { usePlatform, type Http } from '../support/use-platform.ts';

/**
 * Property-based contract test (issue "Hardening", item 12): for every operation, inputs generated
 * from the route's own zod schemas (through their JSON Schema) never get a 5xx, every answer is
 * valid against the OpenAPI document (the test client checks it and throws on a mismatch), a 4xx
 * carries a `code`, and on a few simple create routes a schema-valid input is accepted.
 */

let http: Http;
let key: string;
let customerId: string;
usePlatform({
  worker: true,
  env: { RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_PER_DAY: '1000000', RATE_LIMIT_CONCURRENCY: '50', PAYMENTS_SYNC_WAIT_MS: '1000' },
}, async (t) => {
  ({ http, key } = t);
  const res = await http('/v3/customers', { key, body: { email: 'prop@example.com', name: 'Property Test' } });
  expect(res.status).toBe(201);
  customerId = res.body.id;
});

// ---- A small JSON Schema → fast-check generator ------------------------------------------------

type Schema = Record<string, any>;

/** Strings stay short: long values only slow the run, the limits themselves are tested elsewhere. */
const SHORT = 24;

function arbitraryOf(schema: Schema, root: Schema = schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 6 || !schema || typeof schema !== 'object') return fc.constant(null);
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/')) {
    const target = schema.$ref.slice(2).split('/').reduce((node: any, part: string) => node?.[part], root);
    return arbitraryOf(target, root, depth + 1);
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((s: Schema) => arbitraryOf(s, root, depth + 1)));
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return arbitraryOf(schema.allOf[0], root, depth + 1);
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => arbitraryOf({ ...schema, type }, root, depth + 1)));
  switch (schema.type) {
    case 'string': return stringOf(schema);
    case 'integer': return integerOf(schema);
    case 'number': return numberOf(schema);
    case 'boolean': return fc.boolean();
    case 'null': return fc.constant(null);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      // Nested containers stay small: a recursive schema (a JSON value) would otherwise grow
      // exponentially with the depth and block the event loop while it generates.
      const maxLength = Math.min(schema.maxItems ?? minLength + 3, minLength + (depth > 2 ? 1 : 3));
      return fc.array(arbitraryOf(schema.items ?? {}, root, depth + 1), { minLength, maxLength });
    }
    case 'object': return objectOf(schema, root, depth);
    default: return fc.constant(null);
  }
}

function objectOf(schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  const properties: Record<string, Schema> = schema.properties ?? {};
  const names = Object.keys(properties);
  if (!names.length && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    // A map (e.g. metadata): a few entries with keys of the propertyNames schema.
    // Past the depth limit arbitraryOf gives only null, which no key filter accepts: plain keys there.
    const keys = schema.propertyNames && depth < 6 ? arbitraryOf({ type: 'string', ...schema.propertyNames }, root, depth + 1) : fc.string({ minLength: 1, maxLength: 12 });
    return fc.dictionary(keys.filter((k): k is string => typeof k === 'string' && k !== '__proto__'),
      arbitraryOf(schema.additionalProperties, root, depth + 1), { maxKeys: depth > 2 ? 1 : 3 });
  }
  const model = Object.fromEntries(names.map((name) => [name, arbitraryOf(properties[name]!, root, depth + 1)]));
  return fc.record(model, { requiredKeys: (schema.required ?? []).filter((name: string) => name in properties) });
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = schema.maxLength ?? Number.MAX_SAFE_INTEGER;
  const fits = (s: string) => s.length >= minLength && s.length <= maxLength;
  let arb: fc.Arbitrary<string>;
  if (schema.format === 'date-time') {
    arb = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
  } else if (schema.format === 'date') {
    arb = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
  } else if (schema.format === 'uri') {
    arb = fc.webUrl({ validSchemes: ['https'] });
  } else if (typeof schema.pattern === 'string' && schema.pattern.startsWith('^')) {
    // zod anchors its patterns (email included); the generated strings match them by construction.
    arb = fc.stringMatching(new RegExp(schema.pattern));
  } else if (schema.format === 'email') {
    arb = fc.emailAddress();
  } else {
    arb = fc.string({ minLength, maxLength: Math.max(minLength, Math.min(maxLength, SHORT)) });
  }
  // An unanchored pattern (`\S`: not blank) is a filter on strings of the right length: generating
  // from it would pad it with text of any length, which the length filter then rejects for ever.
  const unanchored = typeof schema.pattern === 'string' && !schema.pattern.startsWith('^') ? new RegExp(schema.pattern) : undefined;
  return arb.filter((s) => fits(s) && (!unanchored || unanchored.test(s)));
}

function integerOf(schema: Schema): fc.Arbitrary<number> {
  let min = schema.minimum ?? Number.MIN_SAFE_INTEGER;
  let max = schema.maximum ?? Number.MAX_SAFE_INTEGER;
  if (typeof schema.exclusiveMinimum === 'number') min = Math.max(min, Math.floor(schema.exclusiveMinimum) + 1);
  if (typeof schema.exclusiveMaximum === 'number') max = Math.min(max, Math.ceil(schema.exclusiveMaximum) - 1);
  min = Math.max(min, Number.MIN_SAFE_INTEGER);
  max = Math.min(max, Number.MAX_SAFE_INTEGER);
  // Mostly small values near the lower bound (the usual case), sometimes anywhere in range.
  return fc.oneof({ weight: 3, arbitrary: fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 1000) }) }, fc.integer({ min, max }));
}

function numberOf(schema: Schema): fc.Arbitrary<number> {
  const exclusive = typeof schema.exclusiveMinimum === 'number';
  const min = exclusive ? schema.exclusiveMinimum : schema.minimum ?? -1e9;
  const max = schema.maximum ?? 1e9;
  return fc.oneof(
    fc.integer({ min: Math.ceil(min), max: Math.floor(Math.min(max, Math.max(min, 0) + 1000)) }),
    fc.double({ min, max, noNaN: true, noDefaultInfinity: true }),
  ).filter((n) => !exclusive || n > min);
}

// ---- Routes and their paths ---------------------------------------------------------------------

/** The id kind a path parameter names (`payment_id` → `pay`). */
const PARAM_PREFIX: Record<string, string> = {
  event_id: ID_PREFIX.event, payment_id: ID_PREFIX.payment, refund_id: ID_PREFIX.refund, plan_id: ID_PREFIX.plan,
  subscription_id: ID_PREFIX.subscription, invoice_id: ID_PREFIX.invoice, clock_id: ID_PREFIX.testClock,
  store_id: ID_PREFIX.store, product_id: ID_PREFIX.product, warehouse_id: ID_PREFIX.warehouse, order_id: ID_PREFIX.order,
  rule_id: ID_PREFIX.automationRule, task_id: ID_PREFIX.task, webhook_id: ID_PREFIX.webhookEndpoint, delivery_id: ID_PREFIX.webhookDelivery,
};

const jsonSchema = (schema: z.ZodType): Schema => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', override: requireNonBlank }) as Schema;

/** The route's path with its parameters filled: the real customer or marketplace, else a well-formed unknown id (a 404 is a fine answer). */
function pathOf(spec: RouteSpec<any, any, any>): string {
  const params = spec.params ? jsonSchema(spec.params).properties ?? {} : {};
  return spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (name === 'customer_id') return customerId;
    const prefix = PARAM_PREFIX[name];
    if (prefix) return `${prefix}_01jzzzzzzzzzzzzzzzzzzzzzzz`;
    const values: unknown[] | undefined = params[name]?.enum;
    if (values?.length) return encodeURIComponent(String(values[0]));
    if (name === 'marketplace') return [...MARKETPLACES.keys()][0]!;
    return name === 'sku' ? 'PROP-SKU-1' : 'unknown';
  });
}

/** A query string from generated values (arrays repeat the key; objects are left out). */
function queryString(values: unknown): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined && typeof item !== 'object') search.append(name, String(item));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

function inputOf(spec: RouteSpec<any, any, any>): fc.Arbitrary<{ body: unknown; query: unknown }> {
  return fc.record({
    body: spec.body ? arbitraryOf(jsonSchema(spec.body)) : fc.constant(undefined),
    query: spec.query ? arbitraryOf(jsonSchema(spec.query)) : fc.constant(undefined),
  });
}

const label = (spec: RouteSpec<any, any, any>) => `${spec.method.toUpperCase()} ${spec.path}`;

async function send(spec: RouteSpec<any, any, any>, input: { body: unknown; query: unknown }) {
  const res = await http(pathOf(spec) + queryString(input.query), {
    method: spec.method.toUpperCase(), key, body: spec.body ? input.body : undefined,
  });
  return res;
}

describe('every operation, with inputs generated from its own schemas', () => {
  it.each(v3Routes.map((spec) => [label(spec), spec] as const))('%s: never a 5xx, every answer as the document says', async (_, spec) => {
    await fc.assert(fc.asyncProperty(inputOf(spec), async (input) => {
      // The client throws when the answer does not match the OpenAPI document.
      const res = await send(spec, input);
      // This server has no language-model provider: /v3/ai answers its documented configuration 503
      // to any valid input (docs/ai.md); bad input is still refused with a 4xx before it.
      if (res.status === 503 && res.body?.code === 'ai_not_configured' && spec.path.startsWith('/v3/ai/')) return;
      expect(res.status, `${label(spec)} answered ${res.status}: ${res.text}`).toBeLessThan(500);
      if (res.status >= 400) expect(typeof res.body?.code, res.text).toBe('string');
    }), { numRuns: spec.body ? 8 : 4 });
  });
});

describe('valid inputs are accepted', () => {
  const route = (method: string, path: string) => v3Routes.find((r) => r.method === method && r.path === path)!;

  const bodyOf = (path: string) => arbitraryOf(jsonSchema(route('post', path).body!)) as fc.Arbitrary<Record<string, unknown>>;
  const nonBlank = fc.string({ minLength: 1, maxLength: SHORT }).filter((s) => s.trim().length > 0);

  // The JSON Schema does not carry the schemas' refinements (a customer needs an
  // email or a name, a supported currency, a plan needs an amount or usage pricing, a webhook's
  // https url, known event kinds and whsec_ secret), so the generated body is completed with values
  // that meet them; everything else comes from the schema. A plan's `usage` (graduated tiers,
  // decimal strings) has more rules than the schema says and is left out here.
  const cases: { spec: RouteSpec<any, any, any>; arb: fc.Arbitrary<unknown> }[] = [
    {
      spec: route('post', '/v3/customers'),
      arb: fc.tuple(bodyOf('/v3/customers'), nonBlank).map(([body, name]) => ({ ...body, name })),
    },
    {
      spec: route('post', '/v3/plans'),
      arb: fc.tuple(bodyOf('/v3/plans'), nonBlank, fc.constantFrom(...SUPPORTED_CURRENCIES), fc.integer({ min: 1, max: 1_000_000 }))
        .map(([{ usage: _usage, ...body }, name, currency, amount]) => ({ ...body, name, currency, amount })),
    },
    {
      spec: route('post', '/v3/webhooks'),
      arb: fc.tuple(bodyOf('/v3/webhooks'), fc.subarray([...eventCatalog.types], { minLength: 1, maxLength: 5 }))
        .map(([{ secret: _secret, ...body }, events]) => ({ ...body, url: 'https://hooks.example.com/receive', events })),
    },
  ];

  it.each(cases.map((c) => [label(c.spec), c] as const))('%s: 2xx, or refused with a business code', async (_, { spec, arb }) => {
    await fc.assert(fc.asyncProperty(arb, async (body) => {
      const res = await send(spec, { body, query: undefined });
      if (res.status >= 300) {
        expect(res.status, res.text).toBeLessThan(500);
        expect(res.body?.code, `${label(spec)} refused a schema-valid body ${JSON.stringify(body)}: ${res.text}`).not.toBe('validation_failed');
      }
    }), { numRuns: 10 });
  });
});
