import { z } from 'zod';
import {
  createCustomer, customerCreateBody, customerSchema, customersByIds, customerUpdateBody, listCustomers, updateCustomer,
  CUSTOMER_TYPES, type CustomerView,
} from '../../customers/public.ts';
import { builder } from '../builder.ts';
import { requirePermission, type GraphQLContext } from '../context.ts';
import { enumFrom } from '../enums.ts';
import { inputTypeFrom, objectTypeFrom } from '../from-zod.ts';
import { validInput } from '../input.ts';
import { connectionOf, rootPage } from '../pages.ts';

export const CustomerRef = objectTypeFrom<CustomerView>('Customer', customerSchema, 'A customer (crm:read), with their subscriptions, invoices, orders and payments.');
const CustomerType = enumFrom('CustomerType', CUSTOMER_TYPES, 'b2b, b2c or b2g.');

/** The request's loader of customers by id (for `customer` on orders, invoices, subscriptions …). */
export function customerLoader(ctx: GraphQLContext) {
  return ctx.loaders.byId('customers', (ids) => customersByIds(ctx.em, ids));
}

builder.queryField('customer', (t) => t.field({
  type: CustomerRef, nullable: true,
  description: 'One customer by id (null when it does not exist in the key\'s account and mode).',
  args: { id: t.arg.string({ required: true }) },
  resolve: (_root, args, ctx) => {
    requirePermission(ctx, 'crm:read');
    return customerLoader(ctx).load(args.id);
  },
}));

builder.queryField('customers', (t) => t.connection({
  type: CustomerRef, nullable: true,
  description: 'Customers, newest first; filters as GET /v3/customers.',
  args: {
    q: t.arg.string({ description: 'Text matched literally in email, names and company name.' }),
    email: t.arg.stringList(),
    segment: t.arg.stringList({ description: 'Customers in any of these segments.' }),
    customer_type: t.arg({ type: [CustomerType] }),
  },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'crm:read');
    const page = rootPage(args);
    const filters = validInput(z.strictObject({
      q: z.string().min(1).max(200).optional(),
      email: z.array(z.email().transform((e) => e.toLowerCase())).max(100).optional(),
      segment: z.array(z.string().min(1).max(64)).max(50).optional(),
      customer_type: z.array(z.enum(CUSTOMER_TYPES)).optional(),
    }), { q: args.q ?? undefined, email: args.email ?? undefined, segment: args.segment ?? undefined, customer_type: args.customer_type ?? undefined });
    return connectionOf(await listCustomers(ctx.em, filters, page), page.limit);
  },
}));

const CreateCustomerInput = inputTypeFrom('CreateCustomerInput', customerCreateBody, 'The body of POST /v3/customers, validated by the same schema (errors name input.<field>).');
const UpdateCustomerInput = inputTypeFrom('UpdateCustomerInput', customerUpdateBody, 'The body of PATCH /v3/customers/{customer_id}, validated by the same schema.');

builder.mutationField('createCustomer', (t) => t.field({
  type: CustomerRef,
  description: 'Create a customer (crm:write): the input is POST /v3/customers\'s body, validated by the same schema.',
  args: { input: t.arg({ type: CreateCustomerInput, required: true }) },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'crm:write');
    return createCustomer(ctx.em, ctx.caller, validInput(customerCreateBody, args.input, 'input'));
  },
}));

builder.mutationField('updateCustomer', (t) => t.field({
  type: CustomerRef,
  description: 'Update a customer (crm:write; records customer.updated): the input is PATCH /v3/customers/{id}\'s body.',
  args: {
    id: t.arg.string({ required: true }),
    input: t.arg({ type: UpdateCustomerInput, required: true }),
  },
  resolve: async (_root, args, ctx) => {
    requirePermission(ctx, 'crm:write');
    return updateCustomer(ctx.em, ctx.caller, args.id, validInput(customerUpdateBody, args.input, 'input'), ctx.requestId);
  },
}));
