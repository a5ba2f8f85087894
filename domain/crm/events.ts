import type { z } from 'zod';
import { eventKind } from '../events/catalog.ts';
import { customerExample } from '../customers/public.ts';
import { segmentMembershipSchema } from './schemas.ts';

const membership = (change: 'entered' | 'left'): z.input<typeof segmentMembershipSchema> => ({
  object: 'segment_membership', livemode: false, segment_id: 'seg_01jpa7m4x0f3qv8r2k6n9t5w1c', segment_name: 'High-value B2B',
  customer_id: customerExample.id, change, at: '2025-03-14T09:30:00.000Z',
});

/** Events the CRM area records. */
export const crmEvents = [
  eventKind({
    type: 'customer.segment.entered', aboutCustomer: true, schema: segmentMembershipSchema,
    description: "A customer started to match a segment's rules (also on the segment's first evaluation).",
    example: membership('entered'),
  }),
  eventKind({
    type: 'customer.segment.left', aboutCustomer: true, schema: segmentMembershipSchema,
    description: "A customer stopped matching a segment's rules (or was deleted).",
    example: membership('left'),
  }),
] as const;

declare module '../events/catalog.ts' {
  interface EventTypes extends Record<(typeof crmEvents)[number]['type'], true> {}
}
