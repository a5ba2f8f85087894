import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { build, spec } from '../support/route-specs.ts';

describe('OpenAPI generation (zod-openapi)', () => {
  it('refuses two different schemas under one component name instead of pointing at either', () => {
    const a = z.object({ a: z.string() }).meta({ id: 'ClashingName' });
    const b = z.object({ b: z.number() }).meta({ id: 'ClashingName' });
    expect(() => build([
      spec({ operationId: 'a', path: '/v3/a', response: a }),
      spec({ operationId: 'b', path: '/v3/b', response: b }),
    ])).toThrow(/ClashingName/);
  });

  it('refuses an id that the response form of another named schema would take', () => {
    const thing = z.object({ n: z.number().default(1) }).meta({ id: 'Widget' });
    const other = z.object({ s: z.string() }).meta({ id: 'WidgetOutput' });
    expect(() => build([spec({ response: z.object({ thing, other }) })])).toThrow(/WidgetOutput.*reserved/);
  });

  it('makes one component of a named schema and references it from every use', () => {
    const gadget = z.object({ id: z.string(), size: z.number().int() }).meta({ id: 'Gadget' });
    const doc = build([
      spec({ operationId: 'get', path: '/v3/gadgets/{id}', params: z.object({ id: z.string() }), response: gadget }),
      spec({ operationId: 'list', path: '/v3/gadgets', response: z.object({ data: z.array(gadget) }) }),
    ]);
    expect(doc.components.schemas.Gadget).toMatchObject({ type: 'object', required: ['id', 'size'], additionalProperties: false });
    expect(doc.paths['/v3/gadgets/{id}']!.get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Gadget' });
    expect(doc.paths['/v3/gadgets']!.get.responses['200'].content['application/json'].schema.properties.data.items)
      .toEqual({ $ref: '#/components/schemas/Gadget' });
    expect(Object.keys(doc.components.schemas).sort()).toEqual(['Gadget', 'Problem']);
  });

  it('gives a named schema that differs as request and response a component for each form', () => {
    const sprocket = z.object({ teeth: z.number().int().default(12) }).meta({ id: 'Sprocket' });
    const doc = build([spec({ method: 'post', status: 201, body: sprocket, response: sprocket })]);
    const op = doc.paths['/v3/things']!.post;
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Sprocket' });
    expect(op.responses['201'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SprocketOutput' });
    expect(doc.components.schemas.Sprocket.required).toBeUndefined();
    expect(doc.components.schemas.SprocketOutput.required).toEqual(['teeth']);
  });

  it('lists the pipeline statuses of each operation and the extra ones its spec declares', () => {
    const doc = build([
      spec({ operationId: 'read', path: '/v3/things/{id}', params: z.object({ id: z.string() }) }),
      spec({
        operationId: 'start', method: 'post', status: 201, temporal: true, response: z.object({ id: z.string() }),
        responses: { 202: { description: 'Still running', schema: z.object({ id: z.string(), pending: z.literal(true) }) }, 402: { description: 'Declined' } },
      }),
    ]);
    expect(Object.keys(doc.paths['/v3/things/{id}']!.get.responses).sort()).toEqual(['200', '401', '403', '404', '406', '422', '429', '503']);
    const start = doc.paths['/v3/things']!.post.responses;
    expect(Object.keys(start).sort()).toEqual(['201', '202', '400', '401', '402', '403', '406', '409', '413', '415', '422', '429', '503']);
    expect(start['202'].content['application/json'].schema.required).toEqual(['id', 'pending']);
    expect(start['402'].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
  });
});

