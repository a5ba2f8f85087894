import { z } from 'zod';
import { customerCreateBody, customerUpdateBody } from '../../../domain/customers/requests.ts';
import { CUSTOMER_TYPES, customerSchema } from '../../../domain/customers/schemas.ts';
import { createCustomer, getCustomer, listCustomers, updateCustomer } from '../../../domain/customers/service.ts';
import { csv, dateOrTimestamp } from '../../http/schemas.ts';
import { listQuery, listRoute } from '../../http/pagination.ts';
import { route } from '../../http/route.ts';

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
    body: customerCreateBody, response: customerSchema,
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
    params: customerId, body: customerUpdateBody, response: customerSchema,
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
