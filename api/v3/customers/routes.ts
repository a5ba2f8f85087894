import { z } from 'zod';
import { CUSTOMER_TYPES, company, customerSchema } from '../../../domain/customers/schemas.ts';
import { createCustomer, getCustomer, listCustomers, updateCustomer } from '../../../domain/customers/service.ts';
import { csv, dateOrTimestamp, jsonValue, metadata } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { route } from '../../http/route.ts';

const email = z.email('expected an email address such as ada@example.com').max(320).transform((e) => e.toLowerCase());
const personName = z.string().trim().min(1).max(200);
const segments = z.array(z.string().trim().min(1).max(64)).max(50);
const customFields = z.record(z.string().min(1).max(40), jsonValue).refine((m) => Object.keys(m).length <= 50, 'at most 50 custom fields');

const createBody = z
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

const updateBody = z.strictObject({
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

const customerId = z.strictObject({ customer_id: z.string().min(1).max(64) });

const listCustomersQuery = z.strictObject({
  ...listQuery,
  email: csv(z.email().transform((e) => e.toLowerCase())).optional().describe('One or more emails, comma-separated.'),
  segment: csv(z.string().min(1)).optional().describe('Customers in any of these segments.'),
  customer_type: csv(z.enum(CUSTOMER_TYPES)).optional(),
  created_gte: dateOrTimestamp('start').optional(),
  created_lte: dateOrTimestamp('end').optional(),
  q: z.string().min(1).max(200).optional().describe('Text matched literally (case-insensitive) in email, names and company name.'),
});

export const customerRoutes = [
  route({
    method: 'post', path: '/v3/customers', operationId: 'createCustomer', tag: 'Customers',
    summary: 'Create a customer', permission: 'crm:write', status: 201,
    body: createBody, response: customerSchema,
    async handler({ em, auth, body }) {
      const customer = await createCustomer(em(), auth, body);
      return { body: customer, headers: { Location: `/v3/customers/${customer.id}` } };
    },
  }),
  route({
    method: 'get', path: '/v3/customers/{customer_id}', operationId: 'getCustomer', tag: 'Customers',
    summary: 'Retrieve a customer', permission: 'crm:read', status: 200, readOnly: true,
    params: customerId, response: customerSchema,
    async handler({ deps, auth, params }) {
      return { body: await getCustomer(deps.orm, auth, params.customer_id) };
    },
  }),
  route({
    method: 'patch', path: '/v3/customers/{customer_id}', operationId: 'updateCustomer', tag: 'Customers',
    summary: 'Update a customer (records customer.updated)', permission: 'crm:write', status: 200,
    params: customerId, body: updateBody, response: customerSchema,
    async handler({ em, auth, params, body, requestId }) {
      return { body: await updateCustomer(em(), auth, params.customer_id, body, requestId) };
    },
  }),
  listRoute({
    path: '/v3/customers', operationId: 'listCustomers', tag: 'Customers',
    summary: 'List customers', permission: 'crm:read', query: listCustomersQuery, item: customerSchema,
    list: ({ em, query }, page) => listCustomers(em(), query, page),
  }),
];
