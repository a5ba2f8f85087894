import { z } from 'zod';
import { jsonValue, metadata } from '../../api/http/schemas.ts';
import { CUSTOMER_TYPES, company } from './schemas.ts';

/**
 * The request bodies that create and update a customer: the REST routes and the GraphQL mutations
 * validate with the same schemas, so both accept and refuse exactly the same input.
 */
const email = z.email('expected an email address such as ada@example.com').max(320).transform((e) => e.toLowerCase());
const personName = z.string().trim().min(1).max(200);
const segments = z.array(z.string().trim().min(1).max(64)).max(50);
const customFields = z.record(z.string().min(1).max(40), jsonValue).refine((m) => Object.keys(m).length <= 50, 'at most 50 custom fields');

export const customerCreateBody = z
  .strictObject({
    email: email.optional(),
    first_name: personName.optional(),
    last_name: personName.optional(),
    name: personName.optional().describe('Quick-start alternative to first_name and last_name.'),
    customer_type: z.enum(CUSTOMER_TYPES).optional(),
    company: company.optional(),
    segments: segments.optional(),
    custom_fields: customFields.optional(),
    metadata: metadata.optional(),
  })
  .refine((b) => b.email || b.name || b.first_name || b.last_name, {
    path: ['email'],
    message: 'a customer needs at least an email or a name (name, or first_name and last_name)',
    // Checked even when other fields are invalid, so every problem is reported at once.
    when: (payload) => typeof payload.value === 'object' && payload.value !== null,
  });

export const customerUpdateBody = z.strictObject({
  email: email.nullable().optional(),
  first_name: personName.nullable().optional(),
  last_name: personName.nullable().optional(),
  name: personName.nullable().optional(),
  customer_type: z.enum(CUSTOMER_TYPES).nullable().optional(),
  company: company.nullable().optional(),
  segments: segments.optional(),
  custom_fields: z.record(z.string().min(1).max(40), jsonValue.nullable()).optional().describe('Merged into the existing fields; null removes a field.'),
  metadata: z.record(z.string().min(1).max(40), z.string().max(500).nullable()).optional().describe('Merged; null or "" removes a key.'),
});
