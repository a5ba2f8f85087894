import { z } from 'zod';
import { builder } from './builder.ts';

type JsonSchema = {
  $ref?: string; $defs?: Record<string, JsonSchema>; type?: string | string[]; properties?: Record<string, JsonSchema>;
  required?: string[]; items?: JsonSchema; anyOf?: JsonSchema[]; oneOf?: JsonSchema[]; maximum?: number; minimum?: number;
  description?: string; enum?: unknown[]; const?: unknown;
};

type Scalar = 'String' | 'Boolean' | 'Int' | 'Float' | 'SafeInt' | 'JSON';
const INT32 = 2 ** 31 - 1;

/** `type` without `null`, and whether null was allowed. */
function unwrap(s: JsonSchema): { s: JsonSchema; nullable: boolean } {
  const variants = s.anyOf ?? s.oneOf;
  if (variants) {
    const rest = variants.filter((v) => v.type !== 'null');
    return rest.length === 1 ? { s: rest[0]!, nullable: rest.length < variants.length } : { s: {}, nullable: rest.length < variants.length };
  }
  if (Array.isArray(s.type)) {
    const rest = s.type.filter((t) => t !== 'null');
    return { s: { ...s, type: rest.length === 1 ? rest[0] : rest }, nullable: rest.length < s.type.length };
  }
  return { s, nullable: false };
}

function scalarOf(s: JsonSchema): Scalar {
  switch (s.type) {
    case 'string': return 'String';
    case 'boolean': return 'Boolean';
    case 'number': return 'Float';
    case 'integer': return (s.maximum ?? Infinity) <= INT32 && (s.minimum ?? -Infinity) >= -INT32 - 1 ? 'Int' : 'SafeInt';
    default: return 'JSON';
  }
}

export interface FieldShape {
  name: string;
  type: Scalar | [Scalar];
  nullable: boolean;
  description?: string;
}

/**
 * The GraphQL fields of a REST resource, read from its zod schema (through its JSON Schema): the
 * same names, strings, booleans and numbers as scalars (integers beyond 32 bits as SafeInt), lists
 * of scalars as lists, nested objects (addresses, line items, metadata) as JSON. A field that is
 * optional or nullable in the schema is nullable here. The REST schema stays the one declaration.
 */
export function fieldsOf(schema: z.ZodType): FieldShape[] {
  const doc = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  const root = doc.$ref ? doc.$defs![doc.$ref.replace('#/$defs/', '')]! : doc;
  const required = new Set(root.required ?? []);
  return Object.entries(root.properties ?? {}).map(([name, raw]) => {
    const { s, nullable } = unwrap(raw);
    const description = raw.description ?? s.description;
    let type: FieldShape['type'] = scalarOf(s);
    if (s.type === 'array' && s.items) {
      const item = scalarOf(unwrap(s.items).s);
      if (item !== 'JSON') type = [item];
    }
    return { name, type, nullable: nullable || !required.has(name), ...(description ? { description } : {}) };
  });
}

/**
 * An object type whose fields are the resource's REST fields (`fieldsOf`); relations are added by
 * the type modules with `builder.objectField`. `omit` leaves out fields GraphQL never shows (a secret).
 */
export function objectTypeFrom<T extends object>(name: string, schema: z.ZodType, description: string, omit: readonly string[] = []) {
  const ref = builder.objectRef<T>(name);
  const shapes = fieldsOf(schema).filter((f) => !omit.includes(f.name));
  ref.implement({
    description,
    fields: (t) => Object.fromEntries(shapes.map((f) => [f.name, t.field({
      type: f.type as never,
      nullable: f.nullable as never,
      ...(f.description ? { description: f.description } : {}),
      resolve: (parent) => ((parent as Record<string, unknown>)[f.name] ?? null) as never,
    })])),
  });
  return ref;
}

const pascal = (field: string) => field.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

/**
 * A GraphQL input object type of a REST request body, read from its zod schema (through its JSON
 * Schema of the input side): the same field names, scalars as in `fieldsOf`, nested objects with
 * named fields as nested input types (`<Name><Field>Input`), lists of either as lists, maps
 * (metadata) and unions as JSON. Every field is optional here whatever the schema says: the REST
 * schema stays the one validation (required fields, ranges, formats, enums), run by the resolver
 * with `validInput`, so GraphQL and REST refuse the same input with the same messages
 * (`input.<field>`). GraphQL itself checks only the shape (unknown fields, a string for a number).
 */
export function inputTypeFrom(name: string, schema: z.ZodType, description: string) {
  const doc = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const defs = doc.$defs ?? {};
  const deref = (s: JsonSchema): JsonSchema => (s.$ref ? deref(defs[s.$ref.replace('#/$defs/', '')] ?? {}) : s);
  const resolved = (s: JsonSchema) => deref(unwrap(deref(s)).s);
  const typeOf = (prefix: string, s: JsonSchema): unknown => {
    if (s.type === 'object' && s.properties && Object.keys(s.properties).length) return objectOf(`${prefix}Input`, s);
    if (s.type === 'array' && s.items) {
      const item = typeOf(prefix, resolved(s.items));
      return item === 'JSON' ? 'JSON' : [item];
    }
    return scalarOf(s);
  };
  const objectOf = (typeName: string, object: JsonSchema, text?: string) => {
    const ref = builder.inputRef<Record<string, unknown>>(typeName);
    const prefix = typeName.replace(/Input$/, '');
    ref.implement({
      ...(text ? { description: text } : {}),
      fields: (t) => Object.fromEntries(Object.entries(object.properties ?? {}).map(([field, raw]) => {
        const s = resolved(raw);
        const about = deref(raw).description ?? s.description;
        return [field, t.field({ type: typeOf(`${prefix}${pascal(field)}`, s) as never, required: false, ...(about ? { description: about } : {}) })];
      })),
    });
    return ref;
  };
  return objectOf(name, deref(doc), description);
}
