import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { scopeFilter, scopedColumns } from '../scope.ts';
import { CUSTOMER_TYPES, type Company } from './schemas.ts';

export { CUSTOMER_TYPES, type Company, type CustomerType } from './schemas.ts';

export const Customer = defineEntity({
  name: 'Customer',
  tableName: 'customers',
  filters: scopeFilter,
  properties: {
    ...scopedColumns(),
    email: p.text().nullable(),
    firstName: p.text().nullable(),
    lastName: p.text().nullable(),
    /** Display name: the quick-start `name`, or first and last name joined. */
    name: p.text().nullable(),
    customerType: p.enum(CUSTOMER_TYPES).nullable(),
    company: p.json<Company>().nullable(),
    segments: p.array().$type<string[]>(),
    customFields: p.json<Record<string, unknown>>(),
    metadata: p.json<Record<string, string>>(),
    version: p.integer().version(),
    createdAt: p.datetime().onCreate(() => new Date()),
    /** Set by the service when a change is applied (so the event and the response agree). */
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Customer = InferEntity<typeof Customer>;
