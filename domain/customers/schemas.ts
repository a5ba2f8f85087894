import { z } from 'zod';

/**
 * The customers area's resources, declared once: each zod schema is what the routes answer with
 * (and what the OpenAPI document and the event catalog show); the TS types are inferred from it.
 * Pure: zod only (workflows may import the types).
 */

export const CUSTOMER_TYPES = ['b2b', 'b2c', 'b2g'] as const;
export type CustomerType = (typeof CUSTOMER_TYPES)[number];

export const company = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  industry: z.string().max(100).optional(),
  size: z.string().max(50).optional().describe('e.g. 1-10, 11-50, enterprise'),
  annual_revenue: z.number().nonnegative().optional().describe('Decimal major units.'),
});

export type Company = z.output<typeof company>;

export const customerSchema = z
  .object({
    id: z.string(),
    object: z.literal('customer'),
    livemode: z.boolean(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    customer_type: z.enum(CUSTOMER_TYPES).nullable(),
    company: company.nullable(),
    segments: z.array(z.string()),
    custom_fields: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Customer' });

/** The Customer resource. */
export type CustomerView = z.output<typeof customerSchema>;
