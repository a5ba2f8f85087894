import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerSchema } from './schemas.ts';

const ts = '2025-03-14T09:30:00.000Z';
export const customerExample: z.input<typeof customerSchema> = {
  id: 'cus_01jpa7m4x0f3qv8r2k6n9t5w1c', object: 'customer', livemode: false, email: 'ada@example.com', name: 'Ada Lovelace',
  first_name: 'Ada', last_name: 'Lovelace', customer_type: 'b2c', company: null, segments: ['vip'], custom_fields: {},
  metadata: {}, created_at: ts, updated_at: ts,
};

/** Events the customers area records. */
export const customerEvents = [
  eventKind({
    type: 'customer.updated', aboutCustomer: true, schema: customerSchema,
    description: 'A customer was updated; `data.previous_attributes` holds the previous values of what changed.',
    example: customerExample,
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof customerEvents)[number]['type'], true> {}
}
