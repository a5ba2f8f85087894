import type { z } from 'zod';

/**
 * An event kind: its name, what it means and the schema of its `data.object` (the resource's own
 * schema, the one its routes answer with), with an example that the schema accepts. Each area
 * declares its kinds (`domain/<area>/events.ts`) in its descriptor; the catalog is every area's
 * kinds together. Webhook endpoints subscribe to these names (or `*`); docs/events.md is written
 * from the catalog.
 */
export interface EventKind<Type extends string = string> {
  type: Type;
  description: string;
  /** Events about a customer carry `customer_metrics` in their payload. */
  aboutCustomer: boolean;
  /** The schema of `data.object`. */
  schema: z.ZodType;
  /** An example of `data.object` (what POST /v3/webhooks/{id}/test sends without `test_data`). */
  example: Record<string, unknown>;
}

/** Declares an event kind; the example is type-checked against the schema (and parsed by a test). */
export function eventKind<const Type extends string, S extends z.ZodType>(kind: {
  type: Type; description: string; aboutCustomer: boolean; schema: S; example: z.input<S> & Record<string, unknown>;
}): EventKind<Type> {
  return kind;
}

/**
 * The names `recordEvent` accepts. Empty here: each area adds its kinds by declaration merging in
 * its events module, so a kind is declared (with its schema and example) before code can emit it:
 *
 *   declare module '../events/catalog.ts' {
 *     interface EventTypes extends Record<(typeof billingEvents)[number]['type'], true> {}
 *   }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventTypes {}
export type EventType = keyof EventTypes & string;

/** Subscribing to `*` receives every kind, including kinds added later. */
export const ALL_EVENTS = '*';

/** A catalog kind with the area that declares it. */
export interface CatalogEntry extends EventKind {
  area: string;
}

/** Every kind every area declares (built once from the area list). */
export class EventCatalog {
  readonly kinds: readonly CatalogEntry[];
  readonly types: readonly string[];
  readonly #byType: ReadonlyMap<string, CatalogEntry>;

  constructor(areas: readonly { name: string; events?: readonly EventKind[] }[]) {
    this.kinds = areas.flatMap((a) => (a.events ?? []).map((k) => ({ ...k, area: a.name })));
    this.#byType = new Map(this.kinds.map((k) => [k.type, k]));
    if (this.#byType.size !== this.kinds.length) {
      const dup = this.kinds.find((k, i) => this.kinds.findIndex((o) => o.type === k.type) !== i)!;
      throw new Error(`event kind ${dup.type} is declared twice`);
    }
    this.types = this.kinds.map((k) => k.type);
  }

  get(type: string): CatalogEntry | undefined {
    return this.#byType.get(type);
  }

  has(type: string): boolean {
    return this.#byType.has(type);
  }
}
