import { builder } from './builder.ts';

/** A GraphQL enum of a REST enum's values (the zod enum's options), so filters are checked by the schema. */
export function enumFrom<const V extends readonly string[]>(name: string, values: V, description: string) {
  return builder.enumType(name, { values, description });
}
