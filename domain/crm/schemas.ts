import { z } from 'zod';
import { ruleGroupSchema } from './segment-rules.ts';

/** The CRM area's segment resources, declared once (routes, OpenAPI, event catalog). Pure: zod only. */

export const segmentSchema = z.object({
  id: z.string(),
  object: z.literal('segment'),
  livemode: z.boolean(),
  name: z.string(),
  description: z.string().nullable(),
  rules: ruleGroupSchema,
  status: z.enum(['active', 'archived']),
  member_count: z.number().int().describe('Customers in the segment as of `last_evaluated_at` (kept current by event-driven refreshes).'),
  last_evaluated_at: z.iso.datetime().nullable().describe('When the whole segment was last evaluated; null until the first evaluation finished.'),
  evaluation_workflow_id: z.string().describe('The workflow of the latest full evaluation.'),
  schedule_id: z.string().nullable().describe('The Temporal schedule that re-evaluates it nightly; null once archived.'),
  metadata: z.record(z.string(), z.string()),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
}).meta({ id: 'Segment' });
export type SegmentView = z.output<typeof segmentSchema>;

export const segmentMembershipSchema = z.object({
  object: z.literal('segment_membership'),
  livemode: z.boolean(),
  segment_id: z.string(),
  segment_name: z.string(),
  customer_id: z.string(),
  change: z.enum(['entered', 'left']),
  at: z.iso.datetime().describe('When the evaluation that saw the change ran.'),
}).meta({ id: 'SegmentMembership' });
export type SegmentMembershipView = z.output<typeof segmentMembershipSchema>;
